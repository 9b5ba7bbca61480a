#include "s3/fake/fake_object_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/strings.h"
#include "s3/fake/callback_executor_internal.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/restore_header.h"

namespace reelfs::s3 {
namespace {

// A client may send If-Match quoted ("abc") or bare, and a weak W/"abc" names the same tag.
std::string_view StripEtagQuotes(std::string_view etag) {
  if (etag.rfind("W/", 0) == 0) etag.remove_prefix(2);
  return Unquote(etag);
}

// S3 caps a page at 1000 keys whatever max-keys says; DeleteObjects takes at most 1000 keys.
constexpr int kMaxKeysCap = 1000;
constexpr size_t kMaxDeleteKeys = 1000;
constexpr int kMaxPartNumber = 10000;
// Sinks get the body in chunks of this size, checking cancellation between them, as they would
// from the network.
constexpr size_t kSinkChunk = 256 * 1024;
// Continuation tokens are opaque to clients; ours are "fk1:" + hex(last emitted key or prefix).
constexpr std::string_view kTokenPrefix = "fk1:";

WallTime Now() {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

Result<std::string> DecodeToken(std::string_view token) {
  Status bad = Status(StatusCode::kInvalidArgument,
                      "InvalidArgument: The continuation token provided is incorrect",
                      StatusDetail{.http_status = 400, .s3_code = "InvalidArgument"});
  if (!token.starts_with(kTokenPrefix)) return bad;
  token.remove_prefix(kTokenPrefix.size());
  if (token.size() % 2 != 0) return bad;
  std::string out;
  for (size_t i = 0; i < token.size(); i += 2) {
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int hi = nibble(token[i]);
    int lo = nibble(token[i + 1]);
    if (hi < 0 || lo < 0) return bad;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::string EncodeToken(std::string_view marker) {
  return std::string(kTokenPrefix) + HexEncode(marker);
}

}  // namespace

FakeObjectStore::FakeObjectStore(FakeObjectStoreOptions options)
    : options_(options),
      executor_(options.callback_mode == FakeObjectStoreOptions::CallbackMode::kWorkerThread
                    ? std::make_unique<fake_internal::CallbackExecutor>()
                    : nullptr) {}

FakeObjectStore::~FakeObjectStore() = default;

bool FakeObjectStore::IsArchiveStorageClass(std::string_view storage_class) {
  return storage_class == "GLACIER" || storage_class == "DEEP_ARCHIVE";
}

void FakeObjectStore::Dispatch(Operation op, std::function<void()> task) {
  calls_[static_cast<size_t>(op)].fetch_add(1, std::memory_order_relaxed);
  if (executor_) {
    executor_->Post(std::move(task));
  } else {
    task();
  }
}

WallTime FakeObjectStore::WallNowLocked() const {
  if (options_.clock == nullptr) return Now();
  return std::chrono::time_point_cast<std::chrono::milliseconds>(options_.clock->WallNow());
}

std::string FakeObjectStore::NextRequestIdLocked() { return "fake-" + std::to_string(next_id_++); }

Status FakeObjectStore::ErrorLocked(int http_status, std::string_view code, std::string message,
                                    std::string resource) {
  S3Error error;
  error.http_status = http_status;
  error.code = std::string(code);
  error.message = std::move(message);
  error.resource = std::move(resource);
  error.request_id = NextRequestIdLocked();
  return S3ErrorToStatus(error);
}

Result<FakeObjectStore::Object*> FakeObjectStore::FindObjectLocked(const std::string& bucket,
                                                                   const std::string& key,
                                                                   bool need_data) {
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) {
    return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist", "/" + bucket);
  }
  auto o = b->second.objects.find(key);
  if (o == b->second.objects.end()) {
    return ErrorLocked(404, "NoSuchKey", "The specified key does not exist.",
                       "/" + bucket + "/" + key);
  }
  Object& object = o->second;
  if (need_data && IsArchiveStorageClass(object.storage_class) &&
      object.restore != RestoreState::kRestored) {
    S3Error error;
    error.http_status = 403;
    error.code = std::string(kS3InvalidObjectState);
    error.message = "The operation is not valid for the object's storage class";
    error.resource = "/" + bucket + "/" + key;
    error.request_id = NextRequestIdLocked();
    error.storage_class = object.storage_class;
    return S3ErrorToStatus(error);
  }
  return &object;
}

ObjectInfo FakeObjectStore::InfoLocked(const std::string& key, const Object& object) const {
  ObjectInfo info;
  info.key = key;
  info.size = object.size;
  info.etag = object.etag;
  info.last_modified = object.last_modified;
  info.storage_class = object.storage_class;
  info.content_type = object.content_type;
  info.user_metadata = object.user_metadata;
  if (object.restore == RestoreState::kOngoing) {
    info.restore = RestoreInfo{.ongoing = true};
  } else if (object.restore == RestoreState::kRestored) {
    info.restore = RestoreInfo{.ongoing = false, .expiry = object.restore_expiry};
  }
  // What a real server's x-amz-restore would carry (HEAD/GET; listings clear it).
  if (info.restore.has_value()) info.restore_header = FormatRestoreHeader(*info.restore);
  info.hints = object.hints;
  return info;
}

// --- Buckets ---

void FakeObjectStore::ListBuckets(Callback<std::vector<BucketInfo>> done) {
  Dispatch(Operation::kListBuckets, [this, done = std::move(done)] {
    std::vector<BucketInfo> out;
    {
      MutexLock lock(mutex_);
      for (const auto& [name, bucket] : buckets_) out.push_back({name, bucket.created});
    }
    done(std::move(out));
  });
}

void FakeObjectStore::CreateBucket(const std::string& bucket, StatusCallback done) {
  Dispatch(Operation::kCreateBucket, [this, bucket, done = std::move(done)] {
    Status status;
    {
      MutexLock lock(mutex_);
      if (bucket.empty()) {
        status = ErrorLocked(400, "InvalidBucketName", "The specified bucket is not valid.", "/");
      } else if (buckets_.contains(bucket)) {
        status = ErrorLocked(409, "BucketAlreadyOwnedByYou",
                             "Your previous request to create the named bucket succeeded and you "
                             "already own it.",
                             "/" + bucket);
      } else {
        buckets_[bucket].created = Now();
      }
    }
    done(std::move(status));
  });
}

void FakeObjectStore::DeleteBucket(const std::string& bucket, StatusCallback done) {
  Dispatch(Operation::kDeleteBucket, [this, bucket, done = std::move(done)] {
    Status status;
    {
      MutexLock lock(mutex_);
      auto it = buckets_.find(bucket);
      if (it == buckets_.end()) {
        status =
            ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist", "/" + bucket);
      } else if (!it->second.objects.empty()) {
        status = ErrorLocked(409, "BucketNotEmpty", "The bucket you tried to delete is not empty",
                             "/" + bucket);
      } else {
        buckets_.erase(it);
      }
    }
    done(std::move(status));
  });
}

// --- Listing ---

void FakeObjectStore::ListObjects(const ListObjectsRequest& req, Callback<ListObjectsPage> done) {
  Dispatch(Operation::kListObjects,
           [this, req, done = std::move(done)] { done(DoListObjects(req)); });
}

Result<ListObjectsPage> FakeObjectStore::DoListObjects(const ListObjectsRequest& req) {
  std::string marker;  // from the continuation token: skip entries (key or prefix) <= marker
  bool has_marker = false;
  if (!req.continuation_token.empty()) {
    REELFS_ASSIGN_OR_RETURN(marker, DecodeToken(req.continuation_token));
    has_marker = true;
  }
  MutexLock lock(mutex_);
  if (req.max_keys < 0) {
    return ErrorLocked(400, "InvalidArgument", "max-keys must be >= 0", "/" + req.bucket);
  }
  auto b = buckets_.find(req.bucket);
  if (b == buckets_.end()) {
    return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                       "/" + req.bucket);
  }
  const int max_keys = std::min(req.max_keys, kMaxKeysCap);
  const auto& objects = b->second.objects;
  ListObjectsPage page;
  int emitted = 0;
  std::string last_emitted;
  // Keys are visited in order; keys sharing a common prefix are contiguous, so remembering the
  // last prefix emitted is enough to roll them up.
  auto it = objects.lower_bound(req.prefix);
  if (!req.start_after.empty() && req.start_after >= req.prefix) {
    it = objects.upper_bound(req.start_after);
  }
  for (; it != objects.end(); ++it) {
    const std::string& key = it->first;
    if (!key.starts_with(req.prefix)) break;
    std::string entry = key;
    bool is_prefix = false;
    if (!req.delimiter.empty()) {
      size_t pos = key.find(req.delimiter, req.prefix.size());
      if (pos != std::string::npos) {
        entry = key.substr(0, pos + req.delimiter.size());
        is_prefix = true;
      }
    }
    if (has_marker && entry <= marker) continue;
    if (is_prefix && !page.common_prefixes.empty() && page.common_prefixes.back() == entry) {
      continue;
    }
    if (emitted == max_keys) {
      // Something is left: this page is full.
      page.is_truncated = max_keys > 0;
      if (page.is_truncated) page.next_continuation_token = EncodeToken(last_emitted);
      break;
    }
    if (is_prefix) {
      page.common_prefixes.push_back(entry);
    } else {
      ObjectInfo info = InfoLocked(key, it->second);
      if (!req.fetch_restore_status) info.restore.reset();  // S3 lists it only on request
      info.restore_header.clear();                          // a header, never in a listing
      if (!req.fetch_tape_hints) info.hints.clear();        // reelfs-gateway: on request
      page.objects.push_back(std::move(info));
    }
    last_emitted = std::move(entry);
    ++emitted;
  }
  return page;
}

// --- Reads ---

void FakeObjectStore::HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) {
  Dispatch(Operation::kHeadObject, [this, req, done = std::move(done)] {
    Result<ObjectInfo> result = [&]() -> Result<ObjectInfo> {
      MutexLock lock(mutex_);
      REELFS_ASSIGN_OR_RETURN(const Object* object,
                              FindObjectLocked(req.bucket, req.key, /*need_data=*/false));
      return InfoLocked(req.key, *object);
    }();
    done(std::move(result));
  });
}

void FakeObjectStore::GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  Dispatch(Operation::kGetObject, [this, req, done = std::move(done)] { done(DoGetObject(req)); });
}

Result<GetObjectResult> FakeObjectStore::DoGetObject(const GetObjectRequest& req) {
  GetObjectResult result;
  std::shared_ptr<const std::string> data;
  uint64_t offset = 0;
  uint64_t length = 0;
  {
    MutexLock lock(mutex_);
    if (req.cancel && req.cancel->cancelled()) {
      return Status::Cancelled("GetObject /" + req.bucket + "/" + req.key + " cancelled");
    }
    REELFS_ASSIGN_OR_RETURN(const Object* object,
                            FindObjectLocked(req.bucket, req.key, /*need_data=*/true));
    const std::string resource = "/" + req.bucket + "/" + req.key;
    // Quoted or bare, as the real client accepts it (the stored ETag is bare).
    if (!req.if_match.empty() && StripEtagQuotes(req.if_match) != object->etag) {
      return ErrorLocked(412, kS3PreconditionFailed,
                         "At least one of the pre-conditions you specified did not hold", resource);
    }
    length = object->size;
    if (req.range.has_value()) {
      // HTTP semantics: a range starting past the end is 416; one running past the end is cut.
      if (req.range->length == 0 || req.range->offset >= object->size) {
        return ErrorLocked(416, "InvalidRange", "The requested range is not satisfiable", resource);
      }
      offset = req.range->offset;
      length = std::min(req.range->length, object->size - offset);
    }
    data = object->data;
    result.http_status = req.range.has_value() ? 206 : 200;  // as S3 answers a ranged GET
    result.object_size = object->size;
    result.info = InfoLocked(req.key, *object);
  }
  const std::string_view key = req.key;
  auto fill = [&](uint64_t at, std::span<std::byte> out) {
    if (data) {
      std::memcpy(out.data(), data->data() + at, out.size());
    } else {
      GeneratedContent(key, at, out);
    }
  };
  if (req.sink) {
    std::vector<std::byte> chunk;
    for (uint64_t done_bytes = 0; done_bytes < length;) {
      if (req.cancel && req.cancel->cancelled()) {
        return Status::Cancelled("GetObject /" + req.bucket + "/" + req.key + " cancelled");
      }
      chunk.resize(std::min<uint64_t>(kSinkChunk, length - done_bytes));
      fill(offset + done_bytes, chunk);
      REELFS_RETURN_IF_ERROR(req.sink(chunk));
      done_bytes += chunk.size();
      result.bytes = done_bytes;
    }
    return result;
  }
  if (length > req.buffer.size()) {
    return Status(StatusCode::kOutOfRange, "GetObject /" + req.bucket + "/" + req.key +
                                               ": body of " + std::to_string(length) +
                                               " bytes does not fit a buffer of " +
                                               std::to_string(req.buffer.size()));
  }
  fill(offset, req.buffer.first(length));
  result.bytes = length;
  return result;
}

// --- Writes ---

void FakeObjectStore::PutObject(const PutObjectRequest& req, Callback<std::string> done) {
  Dispatch(Operation::kPutObject, [this, req, done = std::move(done)] {
    auto data = std::make_shared<const std::string>(reinterpret_cast<const char*>(req.body.data()),
                                                    req.body.size());
    Result<std::string> result = [&]() -> Result<std::string> {
      MutexLock lock(mutex_);
      auto b = buckets_.find(req.bucket);
      if (b == buckets_.end()) {
        return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                           "/" + req.bucket);
      }
      Object object;
      object.size = data->size();
      object.etag = Md5Hex(*data);
      object.data = std::move(data);
      object.last_modified = Now();
      if (!req.storage_class.empty()) object.storage_class = req.storage_class;
      object.content_type = req.content_type;
      object.user_metadata = req.user_metadata;
      std::string etag = object.etag;
      b->second.objects[req.key] = std::move(object);
      return etag;
    }();
    done(std::move(result));
  });
}

void FakeObjectStore::CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                                            Callback<std::string> done) {
  Dispatch(Operation::kCreateMultipartUpload, [this, req, done = std::move(done)] {
    Result<std::string> result = [&]() -> Result<std::string> {
      MutexLock lock(mutex_);
      if (!buckets_.contains(req.bucket)) {
        return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                           "/" + req.bucket);
      }
      std::string id = "upload-" + std::to_string(next_id_++);
      uploads_[id] =
          Upload{req.bucket, req.key, req.content_type, req.user_metadata, {}, WallNowLocked()};
      return id;
    }();
    done(std::move(result));
  });
}

void FakeObjectStore::UploadPart(const UploadPartRequest& req, Callback<std::string> done) {
  Dispatch(Operation::kUploadPart, [this, req, done = std::move(done)] {
    auto data = std::make_shared<const std::string>(reinterpret_cast<const char*>(req.body.data()),
                                                    req.body.size());
    Result<std::string> result = [&]() -> Result<std::string> {
      MutexLock lock(mutex_);
      auto u = uploads_.find(req.upload_id);
      if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
        return ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.",
                           "/" + req.bucket + "/" + req.key);
      }
      if (req.part_number < 1 || req.part_number > kMaxPartNumber) {
        return ErrorLocked(400, "InvalidArgument",
                           "Part number must be an integer between 1 and 10000, inclusive",
                           "/" + req.bucket + "/" + req.key);
      }
      std::string etag = Md5Hex(*data);
      u->second.parts[req.part_number] = Part{std::move(data), etag, WallNowLocked()};
      return etag;
    }();
    done(std::move(result));
  });
}

void FakeObjectStore::CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                                              Callback<std::string> done) {
  Dispatch(Operation::kCompleteMultipartUpload,
           [this, req, done = std::move(done)] { done(DoCompleteMultipartUpload(req)); });
}

Result<std::string> FakeObjectStore::DoCompleteMultipartUpload(
    const CompleteMultipartUploadRequest& req) {
  MutexLock lock(mutex_);
  const std::string resource = "/" + req.bucket + "/" + req.key;
  auto u = uploads_.find(req.upload_id);
  if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
    return ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.", resource);
  }
  auto b = buckets_.find(req.bucket);
  if (b == buckets_.end()) {
    return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                       "/" + req.bucket);
  }
  if (req.parts.empty()) {
    return ErrorLocked(400, "MalformedXML", "You must specify at least one part", resource);
  }
  std::string assembled;
  std::string md5s;  // concatenated binary MD5s of the parts: the multipart ETag hashes these
  int previous = 0;
  for (size_t i = 0; i < req.parts.size(); ++i) {
    const CompletedPart& part = req.parts[i];
    if (part.part_number <= previous) {
      return ErrorLocked(400, "InvalidPartOrder", "The list of parts was not in ascending order.",
                         resource);
    }
    previous = part.part_number;
    auto p = u->second.parts.find(part.part_number);
    if (p == u->second.parts.end() || p->second.etag != part.etag) {
      return ErrorLocked(400, "InvalidPart",
                         "One or more of the specified parts could not be found.", resource);
    }
    if (i + 1 < req.parts.size() && p->second.data->size() < options_.min_part_size) {
      return ErrorLocked(400, "EntityTooSmall",
                         "Your proposed upload is smaller than the minimum allowed object size.",
                         resource);
    }
    assembled += *p->second.data;
    md5s += Md5(*p->second.data);
  }
  Object object;
  object.size = assembled.size();
  object.data = std::make_shared<const std::string>(std::move(assembled));
  object.etag = Md5Hex(md5s) + "-" + std::to_string(req.parts.size());
  object.last_modified = Now();
  object.content_type = u->second.content_type;
  object.user_metadata = u->second.user_metadata;
  std::string etag = object.etag;
  b->second.objects[req.key] = std::move(object);
  uploads_.erase(u);
  return etag;
}

void FakeObjectStore::AbortMultipartUpload(const AbortMultipartUploadRequest& req,
                                           StatusCallback done) {
  Dispatch(Operation::kAbortMultipartUpload, [this, req, done = std::move(done)] {
    Status status;
    {
      MutexLock lock(mutex_);
      auto u = uploads_.find(req.upload_id);
      if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
        status = ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.",
                             "/" + req.bucket + "/" + req.key);
      } else {
        uploads_.erase(u);
      }
    }
    done(std::move(status));
  });
}

void FakeObjectStore::DeleteObject(const DeleteObjectRequest& req, StatusCallback done) {
  Dispatch(Operation::kDeleteObject, [this, req, done = std::move(done)] {
    Status status;
    {
      MutexLock lock(mutex_);
      auto b = buckets_.find(req.bucket);
      if (b == buckets_.end()) {
        status = ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                             "/" + req.bucket);
      } else {
        b->second.objects.erase(req.key);  // deleting a missing key succeeds, as on S3
      }
    }
    done(std::move(status));
  });
}

void FakeObjectStore::DeleteObjects(const DeleteObjectsRequest& req,
                                    Callback<DeleteObjectsResult> done) {
  Dispatch(Operation::kDeleteObjects, [this, req, done = std::move(done)] {
    Result<DeleteObjectsResult> result = [&]() -> Result<DeleteObjectsResult> {
      MutexLock lock(mutex_);
      auto b = buckets_.find(req.bucket);
      if (b == buckets_.end()) {
        return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                           "/" + req.bucket);
      }
      if (req.keys.empty() || req.keys.size() > kMaxDeleteKeys) {
        return ErrorLocked(400, "MalformedXML", "DeleteObjects takes 1 to 1000 keys",
                           "/" + req.bucket);
      }
      DeleteObjectsResult out;
      for (const std::string& key : req.keys) {
        b->second.objects.erase(key);
        if (!req.quiet) out.deleted.push_back(key);
      }
      return out;
    }();
    done(std::move(result));
  });
}

void FakeObjectStore::CopyObject(const CopyObjectRequest& req, Callback<std::string> done) {
  Dispatch(Operation::kCopyObject,
           [this, req, done = std::move(done)] { done(DoCopyObject(req)); });
}

Result<std::string> FakeObjectStore::DoCopyObject(const CopyObjectRequest& req) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(const Object* source,
                          FindObjectLocked(req.source_bucket, req.source_key, true));
  auto b = buckets_.find(req.bucket);
  if (b == buckets_.end()) {
    return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                       "/" + req.bucket);
  }
  Object copy = *source;
  // The copy is a new, online object (S3 copies into STANDARD unless told otherwise).
  copy.storage_class = "STANDARD";
  copy.restore = RestoreState::kNone;
  copy.restore_expiry.reset();
  copy.last_modified = Now();
  if (req.replace_metadata.has_value()) copy.user_metadata = *req.replace_metadata;
  std::string etag = copy.etag;
  b->second.objects[req.key] = std::move(copy);
  return etag;
}

void FakeObjectStore::UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) {
  Dispatch(Operation::kUploadPartCopy,
           [this, req, done = std::move(done)] { done(DoUploadPartCopy(req)); });
}

Result<std::string> FakeObjectStore::DoUploadPartCopy(const UploadPartCopyRequest& req) {
  MutexLock lock(mutex_);
  const std::string resource = "/" + req.bucket + "/" + req.key;
  // As S3 checks them: the upload, the part number, then the source.
  auto u = uploads_.find(req.upload_id);
  if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
    return ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.", resource);
  }
  if (req.part_number < 1 || req.part_number > kMaxPartNumber) {
    return ErrorLocked(400, "InvalidArgument",
                       "Part number must be an integer between 1 and 10000, inclusive", resource);
  }
  REELFS_ASSIGN_OR_RETURN(const Object* source,
                          FindObjectLocked(req.source_bucket, req.source_key, true));
  if (!req.source_if_match.empty() && StripEtagQuotes(req.source_if_match) != source->etag) {
    return ErrorLocked(412, kS3PreconditionFailed,
                       "At least one of the pre-conditions you specified did not hold", resource);
  }
  uint64_t offset = 0;
  uint64_t length = source->size;
  if (req.source_range.has_value()) {
    // AWS: a range that is empty or runs past the source is 400 InvalidArgument (not 416).
    if (req.source_range->length == 0 || req.source_range->offset >= source->size ||
        req.source_range->length > source->size - req.source_range->offset) {
      return ErrorLocked(
          400, "InvalidArgument",
          "Range specified is not valid for source object of size: " + std::to_string(source->size),
          resource);
    }
    offset = req.source_range->offset;
    length = req.source_range->length;
  }
  std::string bytes(length, '\0');
  if (source->data) {
    std::memcpy(bytes.data(), source->data->data() + offset, length);
  } else {
    GeneratedContent(req.source_key, offset,
                     std::span(reinterpret_cast<std::byte*>(bytes.data()), bytes.size()));
  }
  auto data = std::make_shared<const std::string>(std::move(bytes));
  std::string etag = Md5Hex(*data);
  u->second.parts[req.part_number] = Part{std::move(data), etag};
  return etag;
}

// --- Archive ---

void FakeObjectStore::RestoreObject(const RestoreObjectRequest& req,
                                    Callback<RestoreOutcome> done) {
  Dispatch(Operation::kRestoreObject,
           [this, req, done = std::move(done)] { done(DoRestoreObject(req)); });
}

Result<RestoreOutcome> FakeObjectStore::DoRestoreObject(const RestoreObjectRequest& req) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(Object * found, FindObjectLocked(req.bucket, req.key, false));
  Object& object = *found;
  const std::string resource = "/" + req.bucket + "/" + req.key;
  if (!IsArchiveStorageClass(object.storage_class)) {
    S3Error error{.http_status = 403,
                  .code = std::string(kS3InvalidObjectState),
                  .message = "Restore is not allowed for the object's current storage class",
                  .resource = resource,
                  .request_id = NextRequestIdLocked(),
                  .storage_class = object.storage_class};
    return S3ErrorToStatus(error);
  }
  if (req.days.has_value() && *req.days <= 0) {
    return ErrorLocked(400, "InvalidArgument", "Days must be positive", resource);
  }
  object.restore_days = req.days.value_or(1);
  switch (object.restore) {
    case RestoreState::kOngoing:
      return RestoreOutcome::kAlreadyInProgress;
    case RestoreState::kRestored:
      object.restore_expiry = Now() + std::chrono::hours(24) * object.restore_days;
      return RestoreOutcome::kOk;  // AWS's 200: already restored, the expiry moved
    case RestoreState::kNone:
      break;
  }
  if (options_.restore_completes_immediately) {
    object.restore = RestoreState::kRestored;
    object.restore_expiry = Now() + std::chrono::hours(24) * object.restore_days;
  } else {
    object.restore = RestoreState::kOngoing;
  }
  return RestoreOutcome::kAccepted;
}

// --- Test helpers ---

void FakeObjectStore::CreateBucketForTest(const std::string& bucket) {
  MutexLock lock(mutex_);
  auto [it, inserted] = buckets_.try_emplace(bucket);
  if (inserted) it->second.created = Now();
}

std::string FakeObjectStore::PutObjectForTest(const std::string& bucket, const std::string& key,
                                              std::string data, const std::string& storage_class) {
  Object object;
  object.size = data.size();
  object.etag = Md5Hex(data);
  object.data = std::make_shared<const std::string>(std::move(data));
  object.storage_class = storage_class.empty() ? "STANDARD" : storage_class;
  object.last_modified = Now();
  std::string etag = object.etag;
  CreateBucketForTest(bucket);
  MutexLock lock(mutex_);
  buckets_[bucket].objects[key] = std::move(object);
  return etag;
}

std::string FakeObjectStore::PutGeneratedObjectForTest(const std::string& bucket,
                                                       const std::string& key, uint64_t size,
                                                       const std::string& storage_class) {
  Object object;
  object.size = size;
  // 32 hex digits like an MD5, derived from (key, size); not the MD5 of the content.
  const uint64_t words[2] = {SplitMix64(Fnv1a(key) ^ size), SplitMix64(Fnv1a(key) + size)};
  object.etag = HexEncode(std::string_view(reinterpret_cast<const char*>(words), sizeof words));
  object.storage_class = storage_class.empty() ? "STANDARD" : storage_class;
  object.last_modified = Now();
  std::string etag = object.etag;
  CreateBucketForTest(bucket);
  MutexLock lock(mutex_);
  buckets_[bucket].objects[key] = std::move(object);
  return etag;
}

void FakeObjectStore::GeneratedContent(std::string_view key, uint64_t offset,
                                       std::span<std::byte> out) {
  // Byte i of the object is byte (i % 8) of SplitMix64(seed + i / 8): cheap, position-dependent
  // (a misplaced range is detected), and different per key.
  const uint64_t seed = Fnv1a(key);
  size_t i = 0;
  while (i < out.size()) {
    const uint64_t pos = offset + i;
    const uint64_t word = SplitMix64(seed + pos / 8);
    for (unsigned shift = pos % 8; shift < 8 && i < out.size(); ++shift, ++i) {
      out[i] = static_cast<std::byte>(word >> (8 * shift));
    }
  }
}

Status FakeObjectStore::ArchiveObjectForTest(const std::string& bucket, const std::string& key,
                                             const std::string& storage_class) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(Object * found, FindObjectLocked(bucket, key, false));
  Object& object = *found;
  object.storage_class = storage_class;
  object.restore = RestoreState::kNone;
  object.restore_expiry.reset();
  return Status::Ok();
}

Status FakeObjectStore::CompleteRestore(const std::string& bucket, const std::string& key,
                                        std::optional<WallTime> expiry) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(Object * found, FindObjectLocked(bucket, key, false));
  Object& object = *found;
  if (!IsArchiveStorageClass(object.storage_class)) {
    return Status::FailedPrecondition("CompleteRestore: /" + bucket + "/" + key +
                                      " is not in an archive storage class");
  }
  object.restore = RestoreState::kRestored;
  object.restore_expiry = expiry.value_or(Now() + std::chrono::hours(24) * object.restore_days);
  return Status::Ok();
}

Status FakeObjectStore::SetHintsForTest(const std::string& bucket, const std::string& key,
                                        std::map<std::string, std::string> hints) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(Object * found, FindObjectLocked(bucket, key, false));
  found->hints = std::move(hints);
  return Status::Ok();
}

Status FakeObjectStore::ExpireRestore(const std::string& bucket, const std::string& key) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(Object * found, FindObjectLocked(bucket, key, false));
  Object& object = *found;
  object.restore = RestoreState::kNone;
  object.restore_expiry.reset();
  return Status::Ok();
}

uint64_t FakeObjectStore::CallCount(Operation op) const {
  return calls_[static_cast<size_t>(op)].load(std::memory_order_relaxed);
}

void FakeObjectStore::ResetCallCounts() {
  for (auto& count : calls_) count.store(0, std::memory_order_relaxed);
}

void FakeObjectStore::WaitIdle() {
  if (executor_) executor_->WaitIdle();
}

}  // namespace reelfs::s3

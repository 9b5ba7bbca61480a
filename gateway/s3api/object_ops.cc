// Object operations: Get/Head (ranges, conditionals), Put (atomic, hashed), Copy, Delete.
// RestoreObject and the archive headers are in archive_ops.cc.
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/s3_error_table.h"
#include "common/strings.h"
#include "common/time_format.h"
#include "gateway/s3api/internal.h"
#include "gateway/store/etag.h"
#include "gateway/store/key_validation.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/range.h"
#include "s3/protocol/request_codecs.h"
#include "s3/protocol/time_format.h"

namespace reelfs::gateway::s3api {
namespace {

constexpr std::string_view kDefaultContentType = "binary/octet-stream";

// [offset, offset + length) of a file: sent with sendfile by the server (file_range), or read
// with pread into the server's buffer.
class FileBodySource : public http::BodySource {
 public:
  FileBodySource(UniqueFd fd, uint64_t offset) : fd_(std::move(fd)), offset_(offset) {}
  Result<size_t> Read(std::span<char> buffer) override {
    while (true) {
      ssize_t n = ::pread(fd_.get(), buffer.data(), buffer.size(), static_cast<off_t>(offset_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, "read object");
      offset_ += static_cast<uint64_t>(n);
      return static_cast<size_t>(n);
    }
  }
  FileRange file_range() const override { return {fd_.get(), offset_}; }

 private:
  UniqueFd fd_;
  uint64_t offset_;
};

s3::WallTime ToWallTime(int64_t ns) {
  return s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

// Whole seconds, as HTTP dates carry them.
std::chrono::sys_seconds ToSeconds(int64_t ns) {
  return std::chrono::sys_seconds(std::chrono::seconds(ns / 1'000'000'000));
}

bool EtagMatches(const std::string& header, const std::string& etag) {
  std::string_view rest = header;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item == "*" || Unquote(item) == etag) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// 304/412 per RFC 9110 §13.2.2 order, as S3 applies it. nullopt: go on.
std::optional<int> EvaluateConditionals(const S3Request& req, const ObjectRecord& rec) {
  const auto mtime = ToSeconds(rec.mtime_ns);
  auto date = [&](const char* name) -> std::optional<std::chrono::sys_seconds> {
    const std::string* h = req.Header(name);
    if (!h) return std::nullopt;
    auto t = s3::ParseHttpDate(*h);
    if (!t.ok()) return std::nullopt;
    return std::chrono::time_point_cast<std::chrono::seconds>(*t);
  };
  const std::string* if_match = req.Header("if-match");
  if (if_match && !EtagMatches(*if_match, rec.etag)) return 412;
  if (!if_match) {
    if (auto t = date("if-unmodified-since"); t && mtime > *t) return 412;
  }
  const std::string* if_none = req.Header("if-none-match");
  if (if_none && EtagMatches(*if_none, rec.etag)) return 304;
  if (!if_none) {
    if (auto t = date("if-modified-since"); t && mtime <= *t) return 304;
  }
  return std::nullopt;
}

void AddObjectHeaders(Context ctx, const ObjectRecord& rec, http::Response& r) {
  r.headers.emplace_back("ETag", QuoteEtag(rec.etag));
  r.headers.emplace_back("Last-Modified", FormatHttpDate(ToWallTime(rec.mtime_ns)));
  AddArchiveHeaders(ctx, rec, r);  // x-amz-storage-class, x-amz-restore, tape hints
  for (const auto& [name, value] : rec.user_meta) {
    r.headers.emplace_back("x-amz-meta-" + name, value);
  }
}

bool IsValidStorageClass(std::string_view sc) {
  static constexpr std::string_view kClasses[] = {
      "STANDARD",       "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
      "GLACIER",        "DEEP_ARCHIVE",       "GLACIER_IR",  "OUTPOSTS",   "SNOW",
      "EXPRESS_ONEZONE"};
  return std::find(std::begin(kClasses), std::end(kClasses), sc) != std::end(kClasses);
}

}  // namespace

Result<PutOptions> PutOptionsFromHeaders(const S3Request& req) {
  PutOptions options;
  const std::string* ct = req.Header("content-type");
  options.content_type = ct ? *ct : std::string(kDefaultContentType);
  if (const std::string* sc = req.Header("x-amz-storage-class")) {
    if (!IsValidStorageClass(*sc)) {
      return S3CodeError(StatusCode::kInvalidArgument, "InvalidStorageClass", 400,
                         "The storage class you specified is not valid");
    }
    options.storage_class = *sc;
  }
  size_t meta_bytes = 0;
  for (const auto& [name, value] : req.http.headers) {
    if (name.starts_with("x-amz-meta-") && name.size() > 11) {
      options.user_meta[name.substr(11)] = value;
      meta_bytes += name.size() - 11 + value.size();
    }
  }
  if (meta_bytes > 2048) {
    return S3CodeError(StatusCode::kInvalidArgument, "MetadataTooLarge", 400,
                       "Your metadata headers exceed the maximum allowed metadata size.");
  }
  return options;
}

Started GetObject(Context ctx, const S3Request& req) {
  auto opened = ctx.store.Open(req.bucket, req.key);
  if (!opened.ok()) return ErrorResponse(req, opened.status());
  const ObjectRecord& rec = opened->record;
  const char* op = req.is_head() ? "op=HeadObject" : "op=GetObject";
  // Offline (released to tape): GET answers 403 before any data; HEAD describes it.
  const bool offline = rec.archive && rec.archive->state == ArchiveState::kOffline;
  if (offline && !req.is_head()) {
    http::Response r = InvalidObjectState(ctx, req);
    r.log_context = op;
    return r;
  }

  if (auto cond = EvaluateConditionals(req, rec)) {
    if (*cond == 412) {
      http::Response r = ErrorResponse(req, kS3PreconditionFailed,
                                       "At least one of the pre-conditions you specified did not "
                                       "hold",
                                       412);
      r.log_context = op;
      return r;
    }
    http::Response r = EmptyResponse(304);
    AddObjectHeaders(ctx, rec, r);
    r.log_context = op;
    return r;
  }

  http::Response r;
  r.log_context = op;
  AddObjectHeaders(ctx, rec, r);
  r.headers.emplace_back("Accept-Ranges", "bytes");
  std::string content_type =
      rec.content_type.empty() ? std::string(kDefaultContentType) : rec.content_type;
  if (req.Has("response-content-type")) content_type = req.Query("response-content-type");
  r.headers.emplace_back("Content-Type", content_type);
  for (const char* name : {"content-disposition", "content-encoding", "content-language",
                           "cache-control", "expires"}) {
    std::string param = std::string("response-") + name;
    if (req.Has(param)) r.headers.emplace_back(name, req.Query(param));
  }
  // The response-* overrides are percent-decoded query values: a CR, LF or NUL in one would split
  // the response (header injection); the server does not check header values.
  for (const auto& [name, value] : r.headers) {
    if (value.find_first_of("\r\n", 0, 3) != std::string::npos) {
      return ErrorResponse(req, "InvalidArgument",
                           "control character in a response header override", 400);
    }
  }

  uint64_t offset = 0;
  uint64_t length = rec.size;
  if (const std::string* range = req.Header("range")) {
    auto resolved = s3::ResolveRangeHeader(*range, rec.size);
    if (!resolved.ok()) {
      http::Response e =
          ErrorResponse(req, "InvalidRange", "The requested range is not satisfiable", 416);
      e.headers.emplace_back("Content-Range", "bytes */" + std::to_string(rec.size));
      e.log_context = op;
      return e;
    }
    if (resolved->has_value()) {
      offset = (*resolved)->offset;
      length = (*resolved)->length;
      r.status = 206;
      r.headers.emplace_back("Content-Range", s3::FormatContentRange(**resolved, rec.size));
    }
  }
  if (length > 0 && !IsDirectoryMarker(req.key)) {  // offline: HEAD only, never read
    r.stream = std::make_unique<FileBodySource>(std::move(opened->fd), offset);
    r.stream_length = length;
  }
  r.omit_body = req.is_head();
  return r;
}

RdmaPutPlan PlanPutObject(Context ctx, const S3Request& req) {
  auto options = PutOptionsFromHeaders(req);
  if (!options.ok()) return ErrorResponse(req, options.status());
  if (Status st = ctx.store.HeadBucket(req.bucket); !st.ok()) return ErrorResponse(req, st);
  // The request is kept for the error answers' Resource and RequestId (the body may arrive over
  // RDMA, on another thread, after the HTTP request that announced it is gone).
  return RdmaPutCommit([ctx, r = req, opts = std::move(*options)](
                           TmpFile& tmp, const std::string& md5_hex, uint64_t size) {
    Result<ObjectRecord> rec = Status::Internal("unset");
    if (IsDirectoryMarker(r.key)) {
      if (size != 0) {
        return ErrorResponse(r, "DirectoryObjectContainsData",
                             "a key ending in '/' is a directory marker and must be empty", 400);
      }
      rec = ctx.store.PutMarker(r.bucket, r.key, opts);
    } else {
      rec = ctx.store.Put(r.bucket, r.key, tmp, md5_hex, opts);
    }
    if (!rec.ok()) return ErrorResponse(r, rec.status());
    http::Response resp = EmptyResponse(200);
    resp.headers.emplace_back("ETag", QuoteEtag(rec->etag));
    resp.log_context = "op=PutObject bucket=" + LogSafe(r.bucket) + " key=" + LogSafe(r.key) +
                       " size=" + std::to_string(size);
    return resp;
  });
}

Started PutObject(Context ctx, S3Request req) {
  RdmaPutPlan plan = PlanPutObject(ctx, req);
  if (auto* refused = std::get_if<http::Response>(&plan)) return std::move(*refused);
  return StartUpload(ctx, std::move(req), "put",
                     [commit = std::get<RdmaPutCommit>(std::move(plan))](
                         const S3Request&, TmpFile& tmp, const UploadResult& result) {
                       return commit(tmp, result.md5_hex, result.size);
                     });
}

std::variant<CopySource, http::Response> ParseCopySource(const S3Request& req) {
  std::string source = *req.Header("x-amz-copy-source");
  if (size_t q = source.find('?'); q != std::string::npos) source.resize(q);
  auto decoded = s3::UriDecode(source);
  if (!decoded.ok()) return ErrorResponse(req, "InvalidArgument", "Invalid copy source", 400);
  std::string_view src = *decoded;
  if (src.starts_with('/')) src.remove_prefix(1);
  size_t slash = src.find('/');
  if (slash == std::string_view::npos || slash + 1 == src.size()) {
    return ErrorResponse(req, "InvalidArgument",
                         "Copy Source must mention the source bucket and "
                         "key: sourcebucket/sourcekey",
                         400);
  }
  CopySource out{std::string(src.substr(0, slash)), std::string(src.substr(slash + 1))};
  if (Status st = ValidateBucketName(out.bucket); !st.ok()) return ErrorResponse(req, st);
  if (Status st = ValidateObjectKey(out.key); !st.ok()) return ErrorResponse(req, st);
  return out;
}

Started CopyObject(Context ctx, const S3Request& req) {
  auto parsed_source = ParseCopySource(req);
  if (auto* refused = std::get_if<http::Response>(&parsed_source)) return std::move(*refused);
  const std::string src_bucket = std::get<CopySource>(parsed_source).bucket;
  const std::string src_key = std::get<CopySource>(parsed_source).key;
  if (Status st = ctx.store.HeadBucket(req.bucket); !st.ok()) return ErrorResponse(req, st);

  const std::string* directive = req.Header("x-amz-metadata-directive");
  bool replace = directive && *directive == "REPLACE";
  if (directive && !replace && *directive != "COPY") {
    return ErrorResponse(req, "InvalidArgument", "Unknown metadata directive.", 400);
  }
  if (src_bucket == req.bucket && src_key == req.key && !replace) {
    return ErrorResponse(req, "InvalidRequest",
                         "This copy request is illegal because it is trying to copy an object to "
                         "itself without changing the object's metadata.",
                         400);
  }
  auto opened = ctx.store.Open(src_bucket, src_key);
  if (!opened.ok()) return ErrorResponse(req, opened.status());
  const ObjectRecord& srec = opened->record;
  if (srec.archive && srec.archive->state == ArchiveState::kOffline) {
    return InvalidObjectState(ctx, req);  // as AWS: copy of an archived source
  }

  PutOptions opts;
  if (replace) {
    auto o = PutOptionsFromHeaders(req);
    if (!o.ok()) return ErrorResponse(req, o.status());
    opts = std::move(*o);
  } else {
    opts.content_type = srec.content_type;
    opts.storage_class = srec.storage_class;
    opts.user_meta = srec.user_meta;
    if (const std::string* sc = req.Header("x-amz-storage-class")) {
      if (!IsValidStorageClass(*sc)) {  // as PutObject: never stored unchecked
        return ErrorResponse(req, "InvalidStorageClass",
                             "The storage class you specified is not valid", 400);
      }
      opts.storage_class = *sc;
    }
  }
  Result<ObjectRecord> rec = Status::Internal("unset");
  if (IsDirectoryMarker(req.key) || IsDirectoryMarker(src_key)) {
    if (srec.size != 0) {
      return ErrorResponse(req, "DirectoryObjectContainsData",
                           "a key ending in '/' is a directory marker and must be empty", 400);
    }
    rec = IsDirectoryMarker(req.key) ? ctx.store.PutMarker(req.bucket, req.key, opts)
                                     : Status::InvalidArgument("marker to object copy");
    if (!IsDirectoryMarker(req.key)) {
      auto tmp = ctx.store.fs().CreateTmp("copy");
      if (!tmp.ok()) return ErrorResponse(req, tmp.status());
      rec = ctx.store.Put(req.bucket, req.key, *tmp, srec.etag, opts);
    }
  } else {
    auto tmp = ctx.store.fs().CreateTmp("copy");
    if (!tmp.ok()) return ErrorResponse(req, tmp.status());
    if (Status st = tmp->CopyFrom(opened->fd.get(), 0, srec.size); !st.ok()) {
      return ErrorResponse(req, st);
    }
    std::string etag = srec.etag;
    if (etag.find('-') != std::string::npos) {
      // S3 gives a copy of a multipart object the MD5 of its content.
      auto md5 = Md5HexOfFd(tmp->fd());
      if (!md5.ok()) return ErrorResponse(req, md5.status());
      etag = *md5;
    }
    rec = ctx.store.Put(req.bucket, req.key, *tmp, etag, opts);
  }
  if (!rec.ok()) return ErrorResponse(req, rec.status());
  s3::CopyObjectResult result;
  result.etag = rec->etag;
  result.last_modified = ToWallTime(rec->mtime_ns);
  http::Response r = XmlResponse(200, s3::EncodeCopyObjectResult(result));
  r.log_context = "op=CopyObject src=" + LogSafe(src_bucket) + "/" + LogSafe(src_key);
  return r;
}

Started DeleteObject(Context ctx, const S3Request& req) {
  Status st = ctx.store.Delete(req.bucket, req.key);
  if (!st.ok()) return ErrorResponse(req, st);
  http::Response r = EmptyResponse(204);
  r.log_context = "op=DeleteObject";
  return r;
}

}  // namespace reelfs::gateway::s3api

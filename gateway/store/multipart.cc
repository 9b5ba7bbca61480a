// Store's multipart upload methods: parts are staged as files under
// ROOT/.reelfs-gateway/uploads/<upload id>/<part number>, their ETags in the catalog; Complete
// assembles them into one temporary file (copy_file_range) and publishes it like a PUT.
#include <chrono>
#include <random>

#include "common/strings.h"
#include "gateway/store/etag.h"
#include "gateway/store/key_validation.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {
namespace {

std::string NewUploadId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(rng()));
  return buf;
}

Status NoSuchUpload() {
  return S3CodeError(StatusCode::kNotFound, "NoSuchUpload", 404,
                     "The specified multipart upload does not exist");
}

}  // namespace

Result<std::string> Store::CreateUpload(const std::string& bucket, const std::string& key,
                                        const PutOptions& options) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  UploadRecord u;
  u.id = NewUploadId();
  u.bucket = bucket;
  u.key = key;
  u.content_type = options.content_type;
  u.storage_class = options.storage_class.empty() ? "STANDARD" : options.storage_class;
  u.user_meta = options.user_meta;
  u.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  REELFS_RETURN_IF_ERROR(fs_->MakeUploadDir(u.id));
  REELFS_RETURN_IF_ERROR(catalog_->PutUpload(u));
  return u.id;
}

Result<UploadRecord> Store::GetUpload(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) {
  if (!IsValidUploadId(upload_id)) return NoSuchUpload();
  REELFS_ASSIGN_OR_RETURN(std::optional<UploadRecord> u, catalog_->GetUpload(upload_id));
  if (!u.has_value() || u->bucket != bucket || u->key != key) return NoSuchUpload();
  return std::move(*u);
}

Status Store::PutPart(const UploadRecord& upload, int part_number, TmpFile& tmp,
                      const std::string& md5_hex) {
  uint64_t size = tmp.size();
  REELFS_RETURN_IF_ERROR(fs_->PublishPart(tmp, upload.id, part_number));
  return catalog_->PutPart(upload.id, PartRecord{part_number, size, md5_hex});
}

Result<ObjectRecord> Store::CompleteUpload(const UploadRecord& upload,
                                           const std::vector<s3::CompletedPart>& parts) {
  if (parts.empty()) {
    return S3CodeError(StatusCode::kInvalidArgument, "MalformedXML", 400,
                       "CompleteMultipartUpload lists no parts");
  }
  REELFS_ASSIGN_OR_RETURN(std::vector<PartRecord> staged, catalog_->ListParts(upload.id));
  std::map<int, PartRecord> by_number;
  for (PartRecord& p : staged) by_number[p.part_number] = std::move(p);

  std::vector<std::string> md5s;
  std::vector<const PartRecord*> chosen;
  int previous = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const s3::CompletedPart& want = parts[i];
    if (want.part_number <= previous) {
      return S3CodeError(StatusCode::kInvalidArgument, "InvalidPartOrder", 400,
                         "The list of parts was not in ascending order");
    }
    previous = want.part_number;
    auto it = by_number.find(want.part_number);
    if (it == by_number.end() || Unquote(want.etag) != it->second.etag) {
      return S3CodeError(StatusCode::kInvalidArgument, "InvalidPart", 400,
                         "part " + std::to_string(want.part_number) +
                             " was not uploaded or its ETag does not match");
    }
    if (i + 1 < parts.size() && it->second.size < options_.min_part_size) {
      return S3CodeError(
          StatusCode::kInvalidArgument, "EntityTooSmall", 400,
          "part " + std::to_string(want.part_number) + " is smaller than the minimum allowed size");
    }
    md5s.push_back(it->second.etag);
    chosen.push_back(&it->second);
  }
  REELFS_ASSIGN_OR_RETURN(std::string etag, MultipartEtag(md5s));
  REELFS_ASSIGN_OR_RETURN(TmpFile tmp, fs_->CreateTmp("complete"));
  for (const PartRecord* p : chosen) {
    REELFS_ASSIGN_OR_RETURN(UniqueFd fd, fs_->OpenPart(upload.id, p->part_number));
    REELFS_RETURN_IF_ERROR(tmp.CopyFrom(fd.get(), 0, p->size));
  }
  PutOptions options;
  options.content_type = upload.content_type;
  options.storage_class = upload.storage_class;
  options.user_meta = upload.user_meta;
  REELFS_ASSIGN_OR_RETURN(ObjectRecord rec, Put(upload.bucket, upload.key, tmp, etag, options));
  REELFS_RETURN_IF_ERROR(AbortUpload(upload));
  return rec;
}

Status Store::AbortUpload(const UploadRecord& upload) {
  REELFS_RETURN_IF_ERROR(catalog_->DeleteUpload(upload.id));
  return fs_->RemoveUploadDir(upload.id);
}

}  // namespace reelfs::gateway

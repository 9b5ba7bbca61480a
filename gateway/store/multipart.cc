// Store's multipart upload methods: parts are staged under ROOT/.reelfs-gateway/uploads/<upload
// id>/, in place in the upload's data file or as their own files (fs_root.h), their ETags in the
// catalog. Complete publishes the data file itself when every part is in it, in order and
// whole; otherwise it assembles the parts into one temporary file (copy_file_range). Either way
// the result is published like a PUT.
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

Result<TmpFile> Store::CreatePartTarget(const std::string& upload_id, int part_number,
                                        std::optional<uint64_t> size) {
  if (size.has_value()) {
    REELFS_ASSIGN_OR_RETURN(
        std::optional<TmpFile> region,
        fs_->CreatePartInPlace(upload_id, part_number, *size, options_.min_part_size));
    if (region.has_value()) return std::move(*region);
  }
  return fs_->CreateTmp("part");
}

Status Store::PutPart(const UploadRecord& upload, int part_number, TmpFile& tmp,
                      const std::string& md5_hex) {
  uint64_t size = tmp.size();
  REELFS_RETURN_IF_ERROR(fs_->PublishPart(tmp, upload.id, part_number));
  REELFS_RETURN_IF_ERROR(catalog_->PutPart(upload.id, PartRecord{part_number, size, md5_hex}));
  tmp.MarkPublished();
  return Status::Ok();
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
  PutOptions options;
  options.content_type = upload.content_type;
  options.storage_class = upload.storage_class;
  options.user_meta = upload.user_meta;
  REELFS_ASSIGN_OR_RETURN(std::optional<TmpFile> whole, TakeWholeInPlace(upload, staged, chosen));
  if (whole.has_value()) {
    Result<ObjectRecord> rec = Put(upload.bucket, upload.key, *whole, etag, options);
    if (!rec.ok()) {
      // Left as it was: the client may complete again.
      fs_->ReturnUploadData(*whole, upload.id).IgnoreError();
      return rec.status();
    }
    REELFS_RETURN_IF_ERROR(AbortUpload(upload));
    return rec;
  }
  REELFS_ASSIGN_OR_RETURN(TmpFile tmp, fs_->CreateTmp("complete"));
  for (const PartRecord* p : chosen) {
    REELFS_ASSIGN_OR_RETURN(FsRoot::PartLocation at, fs_->LocatePart(upload.id, p->part_number));
    REELFS_RETURN_IF_ERROR(tmp.CopyFrom(at.fd.get(), at.offset, p->size));
  }
  REELFS_ASSIGN_OR_RETURN(ObjectRecord rec, Put(upload.bucket, upload.key, tmp, etag, options));
  REELFS_RETURN_IF_ERROR(AbortUpload(upload));
  return rec;
}

Result<std::optional<TmpFile>> Store::TakeWholeInPlace(
    const UploadRecord& upload, const std::vector<PartRecord>& staged,
    const std::vector<const PartRecord*>& chosen) {
  // Every staged part is listed (nothing beyond the object would be cut off), numbered 1..n, in
  // place, and all but the last fill their slot exactly: the data file is the object.
  if (chosen.size() != staged.size()) return std::optional<TmpFile>();
  REELFS_ASSIGN_OR_RETURN(std::optional<uint64_t> slot, fs_->UploadSlot(upload.id));
  if (!slot.has_value()) return std::optional<TmpFile>();
  uint64_t total = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const PartRecord& p = *chosen[i];
    const bool last = i + 1 == chosen.size();
    if (p.part_number != static_cast<int>(i) + 1) return std::optional<TmpFile>();
    if (last ? p.size > *slot : p.size != *slot) return std::optional<TmpFile>();
    REELFS_ASSIGN_OR_RETURN(FsRoot::PartLocation at, fs_->LocatePart(upload.id, p.part_number));
    if (!at.in_place) return std::optional<TmpFile>();
    total += p.size;
  }
  REELFS_ASSIGN_OR_RETURN(TmpFile data, fs_->TakeUploadData(upload.id, total));
  return std::optional<TmpFile>(std::move(data));
}

Status Store::AbortUpload(const UploadRecord& upload) {
  REELFS_RETURN_IF_ERROR(catalog_->DeleteUpload(upload.id));
  return fs_->RemoveUploadDir(upload.id);
}

}  // namespace reelfs::gateway

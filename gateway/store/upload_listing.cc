// Store's listings of multipart uploads (ListMultipartUploads, ListParts) and the expiry of
// stale uploads (docs/gateway.md "Multipart uploads"). Uploads are few (one per file being
// written), so a listing reads the bucket's upload rows and pages them here.
#include <chrono>

#include <sys/stat.h>

#include "common/log.h"
#include "gateway/store/store.h"
#include "s3/protocol/upload_paging.h"

namespace reelfs::gateway {
namespace {

s3::WallTime FromNs(int64_t ns) {
  return s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

}  // namespace

Result<s3::ListMultipartUploadsPage> Store::ListUploads(const std::string& bucket,
                                                        const UploadListParams& params) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  REELFS_ASSIGN_OR_RETURN(std::vector<UploadRecord> rows, catalog_->ListUploads(bucket));
  std::vector<s3::MultipartUploadInfo> uploads;
  for (const UploadRecord& u : rows) {
    if (!u.key.starts_with(params.prefix)) continue;
    uploads.push_back(s3::MultipartUploadInfo{u.key, u.id, FromNs(u.created_ns), u.storage_class});
  }
  return s3::PageUploads(std::move(uploads), s3::ListMultipartUploadsRequest{
                                                 .bucket = bucket,
                                                 .prefix = params.prefix,
                                                 .delimiter = params.delimiter,
                                                 .key_marker = params.key_marker,
                                                 .upload_id_marker = params.upload_id_marker,
                                                 .max_uploads = params.max_uploads});
}

Result<s3::ListPartsPage> Store::ListUploadParts(const UploadRecord& upload, int part_number_marker,
                                                 int max_parts) {
  REELFS_ASSIGN_OR_RETURN(std::vector<PartRecord> rows, catalog_->ListParts(upload.id));
  std::vector<s3::PartInfo> parts;
  parts.reserve(rows.size());
  for (const PartRecord& p : rows) {
    parts.push_back(s3::PartInfo{p.part_number, p.etag, p.size, FromNs(upload.created_ns)});
  }
  s3::ListPartsPage page = s3::PageParts(std::move(parts), part_number_marker, max_parts);
  // The part's file (or its claim, in place) says when it was uploaded (the catalog keeps no
  // time per part): read for the parts on this page only.
  for (s3::PartInfo& info : page.parts) {
    if (auto st = fs_->StatPart(upload.id, info.part_number); st.ok()) {
      info.last_modified = FromNs(st->mtime_ns);
    }
  }
  return page;
}

Result<std::vector<Store::ExpiredUpload>> Store::ExpireUploads(int64_t cutoff_ns) {
  REELFS_ASSIGN_OR_RETURN(std::vector<UploadRecord> rows, catalog_->ListUploads(""));
  std::vector<ExpiredUpload> expired;
  for (UploadRecord& u : rows) {
    if (u.created_ns >= cutoff_ns) continue;
    ExpiredUpload e;
    if (auto parts = catalog_->ListParts(u.id); parts.ok()) {
      e.parts = parts->size();
      for (const PartRecord& p : *parts) e.bytes += p.size;
    }
    if (Status st = AbortUpload(u); !st.ok()) {
      REELFS_LOG_WARN("gateway", "expiring upload {} of {}/{} failed: {}", u.id, u.bucket, u.key,
                      st.ToString());
      continue;
    }
    expired_uploads_.fetch_add(1, std::memory_order_relaxed);
    expired_parts_.fetch_add(e.parts, std::memory_order_relaxed);
    expired_bytes_.fetch_add(e.bytes, std::memory_order_relaxed);
    e.upload = std::move(u);
    expired.push_back(std::move(e));
  }
  return expired;
}

Store::UploadExpiryStats Store::upload_expiry_stats() const {
  return UploadExpiryStats{expired_uploads_.load(std::memory_order_relaxed),
                           expired_parts_.load(std::memory_order_relaxed),
                           expired_bytes_.load(std::memory_order_relaxed)};
}

}  // namespace reelfs::gateway

// Store's listings of multipart uploads (ListMultipartUploads, ListParts) and the expiry of
// stale uploads (docs/gateway.md "Multipart uploads"). Uploads are few (one per file being
// written), so a listing reads the bucket's upload rows and pages them here.
#include <chrono>

#include <sys/stat.h>

#include "common/log.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {
namespace {

s3::WallTime FromNs(int64_t ns) {
  return s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

// The CommonPrefix `key` rolls up into, or "" when it is listed itself.
std::string RollUp(const std::string& key, const UploadListParams& params) {
  if (params.delimiter.empty()) return {};
  size_t pos = key.find(params.delimiter, params.prefix.size());
  if (pos == std::string::npos) return {};
  return key.substr(0, pos + params.delimiter.size());
}

}  // namespace

Result<s3::ListMultipartUploadsPage> Store::ListUploads(const std::string& bucket,
                                                        const UploadListParams& params) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  REELFS_ASSIGN_OR_RETURN(std::vector<UploadRecord> rows, catalog_->ListUploads(bucket));
  s3::ListMultipartUploadsPage page;
  if (params.max_uploads <= 0) return page;
  const std::string& key_marker = params.key_marker;
  bool past_id_marker = false;
  int count = 0;
  for (const UploadRecord& u : rows) {
    if (!u.key.starts_with(params.prefix)) continue;
    if (!key_marker.empty()) {
      if (u.key < key_marker) continue;
      if (u.key == key_marker) {
        // AWS: with no upload-id-marker, every upload of key-marker was on an earlier page;
        // with one, those initiated after it (an unknown id: none of that key).
        if (params.upload_id_marker.empty() || !past_id_marker) {
          past_id_marker = past_id_marker || u.id == params.upload_id_marker;
          continue;
        }
      }
    }
    std::string prefix = RollUp(u.key, params);
    if (!prefix.empty()) {
      // A prefix at or before the marker was listed on an earlier page.
      if (!key_marker.empty() && prefix <= key_marker) continue;
      if (!page.common_prefixes.empty() && page.common_prefixes.back() == prefix) continue;
    }
    if (count == params.max_uploads) {
      page.is_truncated = true;
      break;
    }
    ++count;
    if (!prefix.empty()) {
      page.next_key_marker = prefix;
      page.next_upload_id_marker.clear();
      page.common_prefixes.push_back(std::move(prefix));
      continue;
    }
    page.next_key_marker = u.key;
    page.next_upload_id_marker = u.id;
    page.uploads.push_back(
        s3::MultipartUploadInfo{u.key, u.id, FromNs(u.created_ns), u.storage_class});
  }
  return page;
}

Result<s3::ListPartsPage> Store::ListUploadParts(const UploadRecord& upload, int part_number_marker,
                                                 int max_parts) {
  REELFS_ASSIGN_OR_RETURN(std::vector<PartRecord> rows, catalog_->ListParts(upload.id));
  s3::ListPartsPage page;
  int count = 0;
  for (const PartRecord& p : rows) {
    if (p.part_number <= part_number_marker) continue;
    if (count == max_parts) {
      page.is_truncated = true;
      break;
    }
    ++count;
    s3::PartInfo info{p.part_number, p.etag, p.size, FromNs(upload.created_ns)};
    // The part's file says when it was uploaded (the catalog keeps no time per part).
    if (auto fd = fs_->OpenPart(upload.id, p.part_number); fd.ok()) {
      struct stat st {};
      if (::fstat(fd->get(), &st) == 0) {
        info.last_modified =
            FromNs(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
      }
    }
    page.next_part_number_marker = p.part_number;
    page.parts.push_back(std::move(info));
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

// FakeObjectStore's ListMultipartUploads and ListParts: AWS's ordering and paging (by key, then
// initiation time; key-marker / upload-id-marker; CommonPrefixes at the delimiter).
#include <algorithm>
#include <tuple>

#include "s3/fake/fake_object_store.h"

namespace reelfs::s3 {

void FakeObjectStore::ListMultipartUploads(const ListMultipartUploadsRequest& req,
                                           Callback<ListMultipartUploadsPage> done) {
  Dispatch(Operation::kListMultipartUploads,
           [this, req, done = std::move(done)] { done(DoListMultipartUploads(req)); });
}

void FakeObjectStore::ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) {
  Dispatch(Operation::kListParts, [this, req, done = std::move(done)] { done(DoListParts(req)); });
}

Result<ListMultipartUploadsPage> FakeObjectStore::DoListMultipartUploads(
    const ListMultipartUploadsRequest& req) {
  MutexLock lock(mutex_);
  if (!buckets_.contains(req.bucket)) {
    return ErrorLocked(404, "NoSuchBucket", "The specified bucket does not exist",
                       "/" + req.bucket);
  }
  std::vector<MultipartUploadInfo> all;
  for (const auto& [id, u] : uploads_) {
    if (u.bucket == req.bucket && u.key.starts_with(req.prefix)) {
      all.push_back(MultipartUploadInfo{u.key, id, u.initiated, "STANDARD"});
    }
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(a.key, a.initiated, a.upload_id) < std::tie(b.key, b.initiated, b.upload_id);
  });
  ListMultipartUploadsPage page;
  const int max = std::clamp(req.max_uploads, 0, 1000);
  bool past_id_marker = false;
  int count = 0;
  for (MultipartUploadInfo& u : all) {
    if (!req.key_marker.empty()) {
      if (u.key < req.key_marker) continue;
      if (u.key == req.key_marker && (req.upload_id_marker.empty() || !past_id_marker)) {
        past_id_marker = past_id_marker || u.upload_id == req.upload_id_marker;
        continue;
      }
    }
    std::string prefix;
    if (!req.delimiter.empty()) {
      size_t pos = u.key.find(req.delimiter, req.prefix.size());
      if (pos != std::string::npos) prefix = u.key.substr(0, pos + req.delimiter.size());
    }
    if (!prefix.empty()) {
      if (!req.key_marker.empty() && prefix <= req.key_marker) continue;
      if (!page.common_prefixes.empty() && page.common_prefixes.back() == prefix) continue;
    }
    if (count == max) {
      page.is_truncated = true;
      break;
    }
    ++count;
    if (!prefix.empty()) {
      page.next_key_marker = prefix;
      page.next_upload_id_marker.clear();
      page.common_prefixes.push_back(std::move(prefix));
    } else {
      page.next_key_marker = u.key;
      page.next_upload_id_marker = u.upload_id;
      page.uploads.push_back(std::move(u));
    }
  }
  return page;
}

Result<ListPartsPage> FakeObjectStore::DoListParts(const ListPartsRequest& req) {
  MutexLock lock(mutex_);
  auto u = uploads_.find(req.upload_id);
  if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
    return ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.",
                       "/" + req.bucket + "/" + req.key);
  }
  ListPartsPage page;
  const int max = std::clamp(req.max_parts, 0, 1000);
  int count = 0;
  for (const auto& [number, part] : u->second.parts) {
    if (number <= req.part_number_marker) continue;
    if (count == max) {
      page.is_truncated = true;
      break;
    }
    ++count;
    page.parts.push_back(PartInfo{number, part.etag, part.data->size(), part.last_modified});
    page.next_part_number_marker = number;
  }
  return page;
}

}  // namespace reelfs::s3

// FakeObjectStore's ListMultipartUploads and ListParts: AWS's ordering and paging (by key, then
// initiation time; key-marker / upload-id-marker; CommonPrefixes at the delimiter).
#include <algorithm>
#include <tuple>

#include "s3/fake/fake_object_store.h"
#include "s3/protocol/upload_paging.h"

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
  ListMultipartUploadsRequest paging = req;
  paging.max_uploads = std::clamp(req.max_uploads, 0, 1000);
  return PageUploads(std::move(all), paging);
}

Result<ListPartsPage> FakeObjectStore::DoListParts(const ListPartsRequest& req) {
  MutexLock lock(mutex_);
  auto u = uploads_.find(req.upload_id);
  if (u == uploads_.end() || u->second.bucket != req.bucket || u->second.key != req.key) {
    return ErrorLocked(404, "NoSuchUpload", "The specified upload does not exist.",
                       "/" + req.bucket + "/" + req.key);
  }
  std::vector<PartInfo> parts;
  for (const auto& [number, part] : u->second.parts) {
    parts.push_back(PartInfo{number, part.etag, part.data->size(), part.last_modified});
  }
  return PageParts(std::move(parts), req.part_number_marker, std::clamp(req.max_parts, 0, 1000));
}

}  // namespace reelfs::s3

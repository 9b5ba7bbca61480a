#include "s3/protocol/upload_paging.h"

#include <string>
#include <utility>

namespace reelfs::s3 {
namespace {

// The CommonPrefix `key` rolls up into, or "" when it is listed itself.
std::string RollUp(const std::string& key, const ListMultipartUploadsRequest& req) {
  if (req.delimiter.empty()) return {};
  size_t pos = key.find(req.delimiter, req.prefix.size());
  if (pos == std::string::npos) return {};
  return key.substr(0, pos + req.delimiter.size());
}

}  // namespace

ListMultipartUploadsPage PageUploads(std::vector<MultipartUploadInfo> uploads,
                                     const ListMultipartUploadsRequest& req) {
  ListMultipartUploadsPage page;
  if (req.max_uploads <= 0) return page;
  bool past_id_marker = false;
  int count = 0;
  for (MultipartUploadInfo& u : uploads) {
    if (!req.key_marker.empty()) {
      if (u.key < req.key_marker) continue;
      // AWS: with no upload-id-marker, every upload of key-marker was on an earlier page; with
      // one, those initiated after it (an unknown id: none of that key).
      if (u.key == req.key_marker && (req.upload_id_marker.empty() || !past_id_marker)) {
        past_id_marker = past_id_marker || u.upload_id == req.upload_id_marker;
        continue;
      }
    }
    std::string prefix = RollUp(u.key, req);
    if (!prefix.empty()) {
      // A prefix at or before the marker was listed on an earlier page.
      if (!req.key_marker.empty() && prefix <= req.key_marker) continue;
      if (!page.common_prefixes.empty() && page.common_prefixes.back() == prefix) continue;
    }
    if (count == req.max_uploads) {
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

ListPartsPage PageParts(std::vector<PartInfo> parts, int part_number_marker, int max_parts) {
  ListPartsPage page;
  int count = 0;
  for (PartInfo& p : parts) {
    if (p.part_number <= part_number_marker) continue;
    if (count == max_parts) {
      page.is_truncated = true;
      break;
    }
    ++count;
    page.next_part_number_marker = p.part_number;
    page.parts.push_back(std::move(p));
  }
  return page;
}

}  // namespace reelfs::s3

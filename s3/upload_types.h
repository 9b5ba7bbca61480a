// Value types of the multipart-upload listings: ListMultipartUploads (the uploads in progress in
// a bucket) and ListParts (the parts staged for one upload), requests and pages.
//
// Thread-safety: plain structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "s3/types.h"

namespace reelfs::s3 {

struct MultipartUploadInfo {
  std::string key;
  std::string upload_id;
  WallTime initiated{};
  std::string storage_class = "STANDARD";
  bool operator==(const MultipartUploadInfo&) const = default;
};

// GET /bucket?uploads. Uploads come sorted by key, then by initiation time (AWS); a page starts
// after (key_marker, upload_id_marker), or after every upload of key_marker when upload_id_marker
// is empty.
struct ListMultipartUploadsRequest {
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  std::string key_marker;
  std::string upload_id_marker;
  int max_uploads = 1000;  // 1..1000
};

struct ListMultipartUploadsPage {
  std::vector<MultipartUploadInfo> uploads;
  std::vector<std::string> common_prefixes;
  bool is_truncated = false;
  std::string next_key_marker;  // where the next page starts (with next_upload_id_marker)
  std::string next_upload_id_marker;
};

struct PartInfo {
  int part_number = 0;
  std::string etag;  // quotes stripped
  uint64_t size = 0;
  WallTime last_modified{};
  bool operator==(const PartInfo&) const = default;
};

// GET /bucket/key?uploadId=ID. Parts come in ascending part number, after part_number_marker.
struct ListPartsRequest {
  std::string bucket;
  std::string key;
  std::string upload_id;
  int part_number_marker = 0;
  int max_parts = 1000;  // 1..1000
};

struct ListPartsPage {
  std::vector<PartInfo> parts;
  bool is_truncated = false;
  int next_part_number_marker = 0;
};

}  // namespace reelfs::s3

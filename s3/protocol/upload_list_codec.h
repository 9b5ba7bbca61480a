// XML codecs for the multipart-upload listings: ListMultipartUploadsResult and ListPartsResult,
// in AWS's element order (the gateway encodes, the client parses).
//
// Parsers tolerate missing optional elements, a namespace prefix and EncodingType=url (Key,
// Prefix, Delimiter, KeyMarker, NextKeyMarker and CommonPrefixes percent-decoded, '+' as space).
// Malformed XML, an <Upload> without Key or UploadId, a bad number or time, a part number out of
// 1..10000, or a truncated page that does not say where the next one starts is kInvalidArgument:
// a client paging on such an answer would loop or skip entries.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/upload_types.h"

namespace reelfs::s3 {

struct ListMultipartUploadsResult {
  std::string bucket;
  std::string prefix;  // echoed request fields
  std::string delimiter;
  std::string key_marker;
  std::string upload_id_marker;
  int max_uploads = 1000;
  bool url_encode = false;  // EncodingType=url was requested
  std::string owner_id;     // Initiator and Owner of every upload (encoding only)
  ListMultipartUploadsPage page;
};
std::string EncodeListMultipartUploadsResult(const ListMultipartUploadsResult& result);
Result<ListMultipartUploadsResult> ParseListMultipartUploadsResult(std::string_view xml);

struct ListPartsResult {
  std::string bucket;
  std::string key;
  std::string upload_id;
  std::string owner_id;  // Initiator and Owner (encoding only)
  std::string storage_class = "STANDARD";
  int part_number_marker = 0;  // echoed
  int max_parts = 1000;
  ListPartsPage page;
};
std::string EncodeListPartsResult(const ListPartsResult& result);
Result<ListPartsResult> ParseListPartsResult(std::string_view xml);

}  // namespace reelfs::s3

// XML codecs for listings: ListObjectsV2, ListObjects (v1) and ListBuckets
// (ListAllMyBucketsResult).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

// What a server sends for ListObjectsV2, with the echoed request fields.
struct ListObjectsV2Result {
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  std::string start_after;
  std::string continuation_token;  // echoed
  int max_keys = 1000;
  bool include_restore_status = false;  // emit <RestoreStatus> for entries that have restore info
  // EncodingType=url was requested: keys, prefixes, delimiter and start-after are percent-encoded
  // (UriEncode, '/' kept) and <EncodingType>url</EncodingType> is emitted. Without it, control
  // characters go out as numeric references (&#1;), as AWS does; NUL cannot be carried by XML and
  // ends the text there, so a server that allows NUL in keys must list with url encoding.
  bool url_encode = false;
  ListObjectsPage page;
};

// Parses Contents (Key, LastModified, ETag, Size, StorageClass, RestoreStatus, and reelfs-gateway's
// ReelfsTape into ObjectInfo::hints under the x-reelfs-tape-* header names), CommonPrefixes,
// IsTruncated, NextContinuationToken. Tolerates missing optional elements and EncodingType=url
// (Key, Prefix, CommonPrefixes, Delimiter, StartAfter then percent-decoded, '+' as space, as AWS
// encodes). Malformed XML, a missing Key, or a malformed value (Size "abc", a bad LastModified,
// IsTruncated "maybe") is kInvalidArgument.
Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml);
std::string EncodeListObjectsV2(const ListObjectsV2Result& result);

// ListObjects (v1): paginated by Marker instead of a continuation token.
struct ListObjectsV1Result {
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  std::string marker;  // echoed
  int max_keys = 1000;
  bool url_encode = false;  // as in ListObjectsV2Result; also applies to Marker and NextMarker
  // Sent only when non-empty. AWS sends it only for a truncated listing with a delimiter; without
  // one, clients continue from the last Key.
  std::string next_marker;
  ListObjectsPage page;  // page.next_continuation_token is not used
};
std::string EncodeListObjectsV1(const ListObjectsV1Result& result);

struct ListObjectsV1Page {
  ListObjectsPage page;     // next_continuation_token stays empty
  std::string next_marker;  // NextMarker, or "" when absent (then: the last Key of the page)
};
// Same tolerance and errors as ParseListObjectsV2.
Result<ListObjectsV1Page> ParseListObjectsV1(std::string_view xml);

Result<std::vector<BucketInfo>> ParseListBuckets(std::string_view xml);
std::string EncodeListBuckets(const std::vector<BucketInfo>& buckets, std::string_view owner_id);

}  // namespace reelfs::s3

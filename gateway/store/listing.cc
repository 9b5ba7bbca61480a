// Store::List: ListObjectsV2 semantics (prefix, delimiter, start-after, continuation) as range
// scans over the catalog, which keeps keys in S3 byte order.
#include <algorithm>
#include <chrono>

#include "gateway/store/etag.h"
#include "gateway/store/store.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

// The smallest string greater than every string that starts with s ("" when there is none).
std::string PrefixSuccessor(std::string s) {
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xFF) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

Status BadToken() {
  return S3CodeError(StatusCode::kInvalidArgument, "InvalidArgument", 400,
                     "The continuation token provided is incorrect");
}

s3::ObjectInfo ToObjectInfo(const ObjectRecord& r) {
  s3::ObjectInfo info;
  info.key = r.key;
  info.size = r.size;
  info.etag = r.etag;
  info.last_modified = s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(r.mtime_ns)));
  info.storage_class = r.storage_class;
  info.content_type = r.content_type;
  return info;
}

}  // namespace

std::string EncodeContinuationToken(char kind, const std::string& bound) {
  return s3::HexEncode(std::string(1, kind) + bound);
}

Result<s3::ListObjectsPage> Store::List(const std::string& bucket, const ListParams& params,
                                        std::vector<ObjectRecord>* out_rows) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  const std::string& prefix = params.prefix;
  const std::string& delim = params.delimiter;
  std::string lower;
  bool inclusive = true;
  std::string skip_prefix;
  if (!params.continuation_token.empty()) {
    auto raw = HexDecode(params.continuation_token);
    if (!raw.ok() || raw->empty() || ((*raw)[0] != 'K' && (*raw)[0] != 'P')) return BadToken();
    inclusive = (*raw)[0] == 'P';
    lower = raw->substr(1);
  } else if (!params.start_after.empty()) {
    lower = params.start_after;
    inclusive = false;
    skip_prefix = params.start_after;
  }
  if (lower < prefix) {
    lower = prefix;
    inclusive = true;
  }
  const std::string upper = prefix.empty() ? std::string() : PrefixSuccessor(prefix);
  const int max_keys = std::clamp(params.max_keys, 0, 1000);

  s3::ListObjectsPage page;
  int count = 0;
  std::string last_token;
  bool done = max_keys == 0;
  while (!done) {
    REELFS_ASSIGN_OR_RETURN(
        std::vector<ObjectRecord> rows,
        catalog_->ListObjects(bucket, lower, inclusive, upper, max_keys - count + 1));
    if (rows.empty()) break;
    for (const ObjectRecord& row : rows) {
      if (row.key.compare(0, prefix.size(), prefix) != 0) {
        done = true;
        break;
      }
      if (count == max_keys) {
        page.is_truncated = true;
        done = true;
        break;
      }
      size_t pos = delim.empty() ? std::string::npos : row.key.find(delim, prefix.size());
      if (pos != std::string::npos) {
        std::string cp = row.key.substr(0, pos + delim.size());
        std::string next = PrefixSuccessor(cp);
        // A marker / start-after that is itself a common prefix (ListObjects v1 hands back the
        // last CommonPrefix as NextMarker) must not list that prefix again.
        if (cp != skip_prefix) {
          page.common_prefixes.push_back(cp);
          ++count;
          last_token = "P" + next;
        }
        if (next.empty()) {
          done = true;
        } else {
          lower = std::move(next);
          inclusive = true;
        }
        break;
      }
      page.objects.push_back(ToObjectInfo(row));
      if (out_rows != nullptr) out_rows->push_back(row);
      ++count;
      last_token = "K" + row.key;
      lower = row.key;
      inclusive = false;
    }
  }
  if (page.is_truncated) {
    page.next_continuation_token = s3::HexEncode(last_token);
  }
  return page;
}

}  // namespace reelfs::gateway

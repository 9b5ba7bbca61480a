// The parser and checks of response_head.h.
#include "s3/client/response_head.h"

#include <cstdlib>

#include "common/strings.h"
#include "s3/client/object_headers.h"
#include "s3/protocol/range.h"

namespace reelfs::s3 {

Result<RangedAnswer> CheckRangedAnswer(const ResponseHead& head, ByteRange range,
                                       const std::string& if_match, const std::string& what) {
  if (head.status == 412) {
    return Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged,
                  what + ": the object is no longer the version pinned (HTTP 412)",
                  StatusDetail{.http_status = 412});
  }
  if (head.status != 206) {
    // Not decoded here: the caller goes through libcurl's path, which maps it properly.
    return Status(StatusCode::kUnavailable, what + ": HTTP " + std::to_string(head.status),
                  StatusDetail{.http_status = head.status});
  }
  if (const std::string* te = head.Header("transfer-encoding"); te != nullptr) {
    return Status(StatusCode::kUnavailable, what + ": a chunked body is not taken here",
                  StatusDetail{.http_status = head.status});
  }
  const std::string* cr = head.Header("content-range");
  const std::string* cl = head.Header("content-length");
  if (cr == nullptr || cl == nullptr) {
    return Status::DataLoss(what + ": a 206 without Content-Range or Content-Length");
  }
  Result<ContentRange> got = ParseContentRange(*cr);
  const uint64_t length = std::strtoull(cl->c_str(), nullptr, 10);
  if (!got.ok() || got->first != range.offset || length == 0 || length > range.length ||
      got->last - got->first + 1 != length) {
    return Status::DataLoss(what + ": Content-Range '" + *cr + "' is not the range asked for");
  }
  if (!if_match.empty()) {
    const std::string* etag = head.Header("etag");
    if (etag == nullptr || StripEtag(*etag) != StripEtag(if_match)) {
      return Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged,
                    what + ": the answer is of another object version",
                    StatusDetail{.http_status = 412});
    }
  }
  return RangedAnswer{.length = length, .object_size = got->total_known ? got->total : 0};
}

const std::string* ResponseHead::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

Result<ResponseHead> ParseResponseHead(std::string_view head) {
  ResponseHead out;
  if (!head.ends_with("\r\n\r\n")) return Status::DataLoss("an HTTP head must end in a blank line");
  head.remove_suffix(2);
  size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.1 206 Partial Content"
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') {
    return Status::DataLoss("not an HTTP/1.x status line");
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    const char c = status_line[i];
    if (c < '0' || c > '9') return Status::DataLoss("a malformed HTTP status code");
    status = status * 10 + (c - '0');
  }
  if (status_line.size() > 12 && status_line[12] != ' ') {
    return Status::DataLoss("a malformed HTTP status code");
  }
  out.status = status;
  head.remove_prefix(eol + 2);
  while (!head.empty()) {
    eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::DataLoss("a malformed HTTP header line");
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    out.headers.emplace_back(Lower(line.substr(0, colon)), std::string(value));
  }
  return out;
}

}  // namespace reelfs::s3

// The head of an HTTP/1.1 answer to a ranged GET, parsed and checked: what the receivers beside
// libcurl (raw_http.h) take from a server before they take its body. Pure functions over
// untrusted bytes (tests/fuzz/response_head_fuzz.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

// The head of an HTTP/1.1 response ("HTTP/1.1 206 Partial Content\r\nName: v\r\n...\r\n\r\n",
// the blank line included), names lowercased.
struct ResponseHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  const std::string* Header(std::string_view name) const;
};
Result<ResponseHead> ParseResponseHead(std::string_view head);

// What a usable answer to a ranged GET says of its body.
struct RangedAnswer {
  uint64_t length = 0;       // body bytes to come (the range, or less where the object ends)
  uint64_t object_size = 0;  // from Content-Range's total; 0 when the server sent '*'
};
// Checks `head` as the answer to a GET of `range` pinned to `if_match`: a 206 with a
// Content-Length and the Content-Range asked for, not chunked, of that ETag. A 412 or another
// ETag is kFailedPrecondition/kObjectChanged; another status kUnavailable with its http_status;
// a head that does not describe the range kDataLoss. `what` prefixes the messages.
Result<RangedAnswer> CheckRangedAnswer(const ResponseHead& head, ByteRange range,
                                       const std::string& if_match, const std::string& what);

}  // namespace reelfs::s3

// HTTP byte ranges (RFC 9110 §14): the Range request header and Content-Range response header.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

// "bytes=OFFSET-LAST" for a ByteRange (length must be > 0).
std::string FormatRangeHeader(const ByteRange& range);

// Resolves a Range header against an object size, as S3 does: "bytes=a-b", "bytes=a-",
// "bytes=-n" (suffix). Returns nullopt (serve the whole object, 200) for syntactically invalid or
// multi-range headers, which S3 ignores; kOutOfRange (416 InvalidRange) when the range is valid
// but unsatisfiable (first byte >= size). A last byte past the end is clamped.
Result<std::optional<ByteRange>> ResolveRangeHeader(std::string_view header, uint64_t object_size);

struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;   // inclusive
  uint64_t total = 0;  // complete length; 0 if the server sent '*'
  bool total_known = true;
};

// "bytes 0-99/1000"; "bytes */1000" (for 416) parses to total only with first=last=0.
Result<ContentRange> ParseContentRange(std::string_view header);
// "bytes 0-99/1000"; an empty range gives "bytes */1000", the form a 416 carries.
std::string FormatContentRange(const ByteRange& range, uint64_t total);

}  // namespace reelfs::s3

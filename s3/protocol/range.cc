#include "s3/protocol/range.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "common/strings.h"

namespace reelfs::s3 {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// All-digit string to a number, saturating at the maximum: "bytes=99999999999999999999999-"
// is well formed and merely unsatisfiable, so overflow must not turn it into garbage.
std::optional<uint64_t> ParseDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    const auto d = static_cast<uint64_t>(c - '0');
    v = v > (kMax - d) / 10 ? kMax : v * 10 + d;
  }
  return v;
}

Status Unsatisfiable(std::string_view header, uint64_t size) {
  return Status(StatusCode::kOutOfRange,
                "range '" + std::string(header.substr(0, 100)) +
                    "' is not satisfiable for an object of " + std::to_string(size) + " bytes",
                StatusDetail{.http_status = 416, .s3_code = "InvalidRange"});
}

}  // namespace

std::string FormatRangeHeader(const ByteRange& range) {
  assert(range.length > 0 && "an empty range has no HTTP form");
  // Saturate: offset + length - 1 past 2^64 would wrap to a small "last" and ask for the wrong
  // bytes; "bytes=N-<max>" means "to the end", which is what such a range wants anyway.
  const uint64_t span = range.length == 0 ? 0 : range.length - 1;
  const uint64_t last = span > std::numeric_limits<uint64_t>::max() - range.offset
                            ? std::numeric_limits<uint64_t>::max()
                            : range.offset + span;
  return "bytes=" + std::to_string(range.offset) + "-" + std::to_string(last);
}

Result<std::optional<ByteRange>> ResolveRangeHeader(std::string_view header, uint64_t object_size) {
  const std::optional<ByteRange> ignore;  // S3 serves the whole object for what it ignores
  header = Trim(header);
  // The unit is case-insensitive (RFC 9110 §14.1); spaces around '=' are tolerated.
  if (!StartsWithIgnoreCase(header, "bytes")) return ignore;
  std::string_view spec = Trim(header.substr(5));
  if (spec.empty() || spec.front() != '=') return ignore;
  spec = Trim(spec.substr(1));
  if (spec.find(',') != std::string_view::npos) return ignore;  // multi-range: S3 ignores
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return ignore;
  const std::string_view first_s = Trim(spec.substr(0, dash));
  const std::string_view last_s = Trim(spec.substr(dash + 1));

  if (first_s.empty()) {  // suffix: the last N bytes
    const std::optional<uint64_t> n = ParseDigits(last_s);
    if (!n) return ignore;
    // RFC 9110 §14.1.1: a zero suffix, or any suffix of an empty object, selects nothing.
    if (*n == 0 || object_size == 0) return Unsatisfiable(header, object_size);
    const uint64_t len = std::min(*n, object_size);
    return std::optional<ByteRange>(ByteRange{object_size - len, len});
  }
  const std::optional<uint64_t> first = ParseDigits(first_s);
  if (!first) return ignore;
  uint64_t last = kMax;
  if (!last_s.empty()) {
    const std::optional<uint64_t> parsed_last = ParseDigits(last_s);
    if (!parsed_last || *parsed_last < *first) return ignore;  // invalid, not unsatisfiable
    last = *parsed_last;
  }
  if (*first >= object_size) return Unsatisfiable(header, object_size);
  last = std::min(last, object_size - 1);
  return std::optional<ByteRange>(ByteRange{*first, last - *first + 1});
}

Result<ContentRange> ParseContentRange(std::string_view header) {
  const auto malformed = [&] {
    return Status::InvalidArgument("malformed Content-Range '" +
                                   std::string(header.substr(0, 100)) + "'");
  };
  std::string_view s = Trim(header);
  if (!StartsWithIgnoreCase(s, "bytes ")) return malformed();
  s = Trim(s.substr(6));
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return malformed();
  const std::string_view range_s = s.substr(0, slash);
  const std::string_view total_s = s.substr(slash + 1);

  ContentRange out;
  if (total_s == "*") {
    out.total_known = false;
  } else {
    const std::optional<uint64_t> total = ParseDigits(total_s);
    if (!total || *total == kMax) return malformed();
    out.total = *total;
  }
  if (range_s == "*") {  // "bytes */1000", sent with 416
    if (!out.total_known) return malformed();
    return out;
  }
  const size_t dash = range_s.find('-');
  if (dash == std::string_view::npos) return malformed();
  const std::optional<uint64_t> first = ParseDigits(range_s.substr(0, dash));
  const std::optional<uint64_t> last = ParseDigits(range_s.substr(dash + 1));
  if (!first || !last || *last < *first || *last == kMax) return malformed();
  if (out.total_known && *last >= out.total) return malformed();
  out.first = *first;
  out.last = *last;
  return out;
}

std::string FormatContentRange(const ByteRange& range, uint64_t total) {
  // An empty range is how a 416 says "nothing of this many bytes".
  if (range.length == 0) return "bytes */" + std::to_string(total);
  return "bytes " + std::to_string(range.offset) + "-" +
         std::to_string(range.offset + range.length - 1) + "/" + std::to_string(total);
}

}  // namespace reelfs::s3

// Range request header and Content-Range response header (s3/protocol/range.h). The first 8
// bytes are the object size (little-endian), the rest the header value. Properties: a resolved
// range is non-empty and inside the object; a parsed Content-Range is ordered and inside its
// total; both format and parse back to themselves.
#include <cstring>

#include "s3/protocol/range.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  uint64_t object_size = 0;
  if (size >= sizeof object_size) {
    std::memcpy(&object_size, data, sizeof object_size);
    data += sizeof object_size;
    size -= sizeof object_size;
  }
  std::string_view header = reelfs::fuzz::AsView(data, size);

  auto resolved = ResolveRangeHeader(header, object_size);
  if (resolved.ok() && resolved->has_value()) {
    const ByteRange r = **resolved;
    REELFS_FUZZ_CHECK(r.length > 0);
    REELFS_FUZZ_CHECK(r.offset < object_size && r.length <= object_size - r.offset);
    auto again = ResolveRangeHeader(FormatRangeHeader(r), object_size);
    REELFS_FUZZ_CHECK(again.ok() && again->has_value() && **again == r);
  }

  auto content_range = ParseContentRange(header);
  if (content_range.ok() && content_range->total_known &&
      !(content_range->first == 0 && content_range->last == 0 && content_range->total == 0)) {
    const ContentRange& c = *content_range;
    REELFS_FUZZ_CHECK(c.first <= c.last);
    REELFS_FUZZ_CHECK(c.last < c.total || (c.first == 0 && c.last == 0));
  }
  return 0;
}

// ListObjectsV2 response parser (s3/protocol/list_codec.h), with <ReelfsTape> and
// EncodingType=url. Property: what parses re-encodes (url-encoded, so any key survives XML) and
// parses back to the same keys, sizes and common prefixes.
#include "s3/protocol/list_codec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  auto page = ParseListObjectsV2(reelfs::fuzz::AsView(data, size));
  if (!page.ok()) return 0;
  ListObjectsV2Result result;
  result.bucket = "b";
  result.url_encode = true;
  result.page = *page;
  auto again = ParseListObjectsV2(EncodeListObjectsV2(result));
  REELFS_FUZZ_CHECK(again.ok());
  REELFS_FUZZ_CHECK(again->objects.size() == page->objects.size());
  for (size_t i = 0; i < page->objects.size(); ++i) {
    REELFS_FUZZ_CHECK(again->objects[i].key == page->objects[i].key);
    REELFS_FUZZ_CHECK(again->objects[i].size == page->objects[i].size);
  }
  REELFS_FUZZ_CHECK(again->common_prefixes == page->common_prefixes);
  REELFS_FUZZ_CHECK(again->is_truncated == page->is_truncated);
  return 0;
}

// ListObjects (v1) and ListBuckets response parsers (s3/protocol/list_codec.h): the same bytes go
// to both; neither may crash, and a parsed v1 page re-encodes (url-encoded) to the same keys.
#include "s3/protocol/list_codec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ParseListBuckets(in);
  auto v1 = ParseListObjectsV1(in);
  if (!v1.ok()) return 0;
  ListObjectsV1Result result;
  result.bucket = "b";
  result.url_encode = true;
  result.page = v1->page;
  auto again = ParseListObjectsV1(EncodeListObjectsV1(result));
  REELFS_FUZZ_CHECK(again.ok());
  REELFS_FUZZ_CHECK(again->page.objects.size() == v1->page.objects.size());
  for (size_t i = 0; i < v1->page.objects.size(); ++i) {
    REELFS_FUZZ_CHECK(again->page.objects[i].key == v1->page.objects[i].key);
  }
  REELFS_FUZZ_CHECK(again->page.common_prefixes == v1->page.common_prefixes);
  return 0;
}

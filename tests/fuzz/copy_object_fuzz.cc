// CopyObjectResult parser (s3/protocol/request_codecs.h), which may carry an <Error> in a 200.
#include "s3/protocol/request_codecs.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  auto result = ParseCopyObjectResult(reelfs::fuzz::AsView(data, size));
  if (result.ok()) (void)EncodeCopyObjectResult(*result);
  return 0;
}

// CopyObjectResult and CopyPartResult (UploadPartCopy) parsers (s3/protocol/request_codecs.h),
// which may carry an <Error> in a 200. Both see every input: the two share one decoder under two
// root names.
#include "s3/protocol/request_codecs.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  const std::string_view input = reelfs::fuzz::AsView(data, size);
  auto result = ParseCopyObjectResult(input);
  if (result.ok()) (void)EncodeCopyObjectResult(*result);
  auto part = ParseCopyPartResult(input);
  if (part.ok()) (void)EncodeCopyPartResult(*part);
  return 0;
}

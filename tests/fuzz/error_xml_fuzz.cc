// S3 error document parser and its Status mapping (s3/protocol/error_codec.h).
#include "s3/protocol/error_codec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  auto error = ParseErrorXml(reelfs::fuzz::AsView(data, size));
  if (!error.ok()) return 0;
  reelfs::Status status = S3ErrorToStatus(*error);
  // A parsed error document always maps to a failure.
  REELFS_FUZZ_CHECK(!status.ok());
  (void)HttpStatusForErrorCode(error->code);
  (void)EncodeErrorXml(*error);
  return 0;
}

// RestoreRequest body parser (and CreateBucketConfiguration, the other small request body the
// gateway parses) from s3/protocol/request_codecs.h. Property: a parsed RestoreRequest
// re-encodes and parses back to the same days and tier.
#include "s3/protocol/request_codecs.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ParseCreateBucketConfiguration(in);
  auto body = ParseRestoreRequest(in);
  if (!body.ok()) return 0;
  REELFS_FUZZ_CHECK(!body->days.has_value() || *body->days > 0);
  auto again = ParseRestoreRequest(EncodeRestoreRequest(*body));
  REELFS_FUZZ_CHECK(again.ok());
  REELFS_FUZZ_CHECK(again->days == body->days && again->tier == body->tier);
  return 0;
}

// DeleteObjects codecs (s3/protocol/request_codecs.h): the <Delete> request the gateway parses
// and the <DeleteResult> the client parses; the same bytes go to both.
#include "s3/protocol/request_codecs.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ParseDeleteResult(in);
  auto input = ParseDeleteObjects(in);
  if (input.ok()) (void)EncodeDeleteObjects(*input);
  return 0;
}

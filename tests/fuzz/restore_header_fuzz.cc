// x-amz-restore header parser (s3/protocol/restore_header.h). Property: a parsed value formats
// (AWS form) and parses back to the same ongoing flag.
#include "s3/protocol/restore_header.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  auto info = ParseRestoreHeader(reelfs::fuzz::AsView(data, size));
  if (!info.ok()) return 0;
  auto again = ParseRestoreHeader(FormatRestoreHeader(*info));
  REELFS_FUZZ_CHECK(again.ok());
  REELFS_FUZZ_CHECK(again->ongoing == info->ongoing);
  return 0;
}

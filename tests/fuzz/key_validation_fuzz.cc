// The gateway's bucket-name, object-key, upload-id and UTF-8 checks
// (gateway/store/key_validation.h), which stand between a request and a path under the root.
// Properties: a valid key splits into components that are never empty, "." or "..", never
// contain '/' or NUL, and never name the reserved directory; a valid upload id is 32 lowercase
// hex digits.
#include "gateway/store/key_validation.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::gateway;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ValidateBucketName(in);
  (void)IsValidUtf8(in);
  if (IsValidUploadId(in)) {
    REELFS_FUZZ_CHECK(in.size() == 32 &&
                      in.find_first_not_of("0123456789abcdef") == std::string_view::npos);
  }
  if (!ValidateObjectKey(in).ok()) return 0;
  REELFS_FUZZ_CHECK(!in.empty() && in.size() <= kMaxKeyBytes && IsValidUtf8(in));
  std::vector<std::string> parts = SplitKey(in);
  REELFS_FUZZ_CHECK(!parts.empty());
  for (const std::string& part : parts) {
    REELFS_FUZZ_CHECK(!part.empty() && part != "." && part != "..");
    REELFS_FUZZ_CHECK(part.size() <= kMaxComponentBytes);
    REELFS_FUZZ_CHECK(part.find('/') == std::string::npos && part.find('\0') == std::string::npos);
  }
  REELFS_FUZZ_CHECK(parts.front() != kReservedDir);
  return 0;
}

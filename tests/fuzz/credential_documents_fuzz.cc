// The credential documents (s3/protocol/credential_documents.h): STS AssumeRole and
// AssumeRoleWithWebIdentity answers, STS ErrorResponse, container / IMDS JSON. First byte picks
// the parser, the rest is the body.
#include "s3/protocol/credential_documents.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  if (size == 0) return 0;
  const std::string_view body = reelfs::fuzz::AsView(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
    case 1: {
      const char* action = data[0] % 4 == 0 ? "AssumeRole" : "AssumeRoleWithWebIdentity";
      auto creds = ParseStsCredentials(body, action);
      // Parsed credentials always have the four members STS promises.
      if (creds.ok()) {
        REELFS_FUZZ_CHECK(!creds->credentials.access_key_id.empty());
        REELFS_FUZZ_CHECK(!creds->credentials.secret_access_key.empty());
        REELFS_FUZZ_CHECK(!creds->credentials.session_token.empty());
        REELFS_FUZZ_CHECK(creds->expiration.has_value());
      }
      break;
    }
    case 2: {
      // Every STS error, whatever its body, is a failure.
      REELFS_FUZZ_CHECK(!StsErrorToStatus(400, body, "AssumeRole").ok());
      break;
    }
    default: {
      auto creds = ParseJsonCredentials(body, "imds");
      if (creds.ok()) {
        REELFS_FUZZ_CHECK(!creds->credentials.access_key_id.empty());
        REELFS_FUZZ_CHECK(!creds->credentials.secret_access_key.empty());
      }
      break;
    }
  }
  return 0;
}

// DC v1 token codec (rdmaio/wire/dc_token.h). Property: a decoded token re-encodes to the input,
// lowercased, and decodes again to the same value.
#include "rdmaio/wire/dc_token.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::rdmaio::wire;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  auto token = DecodeDcToken(in);
  if (!token.ok()) return 0;
  REELFS_FUZZ_CHECK(in.size() == kDcTokenLength);
  REELFS_FUZZ_CHECK(token->size > 0 && token->size <= kDcMaxWindowBytes);
  REELFS_FUZZ_CHECK(token->dctn <= kMaxDctn);
  auto text = EncodeDcToken(*token);
  REELFS_FUZZ_CHECK(text.ok());
  auto again = DecodeDcToken(*text);
  REELFS_FUZZ_CHECK(again.ok() && *again == *token);
  return 0;
}

// RC token codec (rdmaio/wire/rc_token.h). Property: a decoded token with a region re-encodes to
// the input, lowercased (the encoder refuses a zero length, which the decoder accepts).
#include "rdmaio/wire/rc_token.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::rdmaio::wire;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  auto token = DecodeRcToken(in);
  if (!token.ok()) return 0;
  REELFS_FUZZ_CHECK(in.size() == kRcTokenHexLength);
  REELFS_FUZZ_CHECK(token->qpn <= kMaxQpn);
  if (token->length == 0) return 0;
  auto text = EncodeRcToken(*token);
  REELFS_FUZZ_CHECK(text.ok());
  std::string lower(in);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  REELFS_FUZZ_CHECK(*text == lower);
  return 0;
}

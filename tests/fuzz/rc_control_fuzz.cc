// hipobj-rc-v2 control bodies (rdmaio/wire/rc_control.h): PREPARE, its reply, READY, its reply
// and CANCEL, all decoded from the same header lines. Property: the encoders check what the
// decoders check, so whatever decodes re-encodes, and decodes again. One documented leniency is
// exempt: a PREPARE reply's server token may have a zero-length window (rc_token.h: its region
// comes in x-amz-rdma-mr-*), which the decoder accepts from other servers and our encoder, which
// always names its staging region, refuses.
#include "rdmaio/wire/rc_control.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace reelfs::rdmaio::wire;  // NOLINT(google-build-using-namespace)

template <class Decode, class Encode>
void RoundTrip(const HeaderList& headers, Decode decode, Encode encode) {
  auto value = decode(headers);
  if (!value.ok()) return;
  if constexpr (requires { value->server_token; }) {
    if (value->server_token.length == 0) return;
  }
  auto again = encode(*value);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n", again.status().ToString().c_str());
    reelfs::fuzz::Violated("what decodes re-encodes");
  }
  REELFS_FUZZ_CHECK(decode(*again).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HeaderList headers = reelfs::fuzz::SplitHeaders(reelfs::fuzz::AsView(data, size), true);
  RoundTrip(headers, DecodeRcPrepare, EncodeRcPrepare);
  RoundTrip(headers, DecodeRcPrepareReply, EncodeRcPrepareReply);
  RoundTrip(headers, DecodeRcReady, EncodeRcReady);
  RoundTrip(headers, DecodeRcReadyReply, EncodeRcReadyReply);
  RoundTrip(headers, DecodeRcCancel, EncodeRcCancel);
  auto reply = DecodeRcReadyReply(headers);
  if (reply.ok()) (void)CheckRcReadyReply(*reply, 1, 1);
  return 0;
}

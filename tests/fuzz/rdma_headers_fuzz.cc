// x-amz-rdma-* reply headers (rdmaio/wire/rdma_headers.h): the bytes are header lines; every
// value also goes to the value parsers directly. Covers x-amz-rdma-reply (with an RC server
// token), the byte counts (both names), and the DC data request a server decodes.
#include "rdmaio/wire/rdma_headers.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::rdmaio::wire;  // NOLINT(google-build-using-namespace)
  HeaderList headers = reelfs::fuzz::SplitHeaders(reelfs::fuzz::AsView(data, size), true);
  for (const auto& [name, value] : headers) {
    auto reply = ParseRdmaReply(value);
    if (reply.ok() && reply->server_token.has_value()) {
      REELFS_FUZZ_CHECK(reply->kind == RdmaReply::Kind::kSuccess);
    }
    (void)ParseBytesTransferred(value);
  }
  (void)FindBytesTransferred(headers);
  auto dc = DecodeDcDataRequest(headers);
  if (dc.ok() && dc->has_value()) REELFS_FUZZ_CHECK(DcDataRequestHeaders(**dc).ok());
  return 0;
}

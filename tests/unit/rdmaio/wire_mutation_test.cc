// Deterministic mutation testing of every decoder: valid inputs with random bytes changed,
// truncated or extended. Nothing may crash (this runs under ASan/UBSan), and whatever decodes
// must re-encode to the same token (modulo hex case), so no mutation is silently reinterpreted.
#include <random>
#include <string>

#include <doctest/doctest.h>

#include "common/strings.h"
#include "rdmaio/wire/dc_token.h"
#include "rdmaio/wire/rc_control.h"
#include "rdmaio/wire/rc_token.h"
#include "rdmaio/wire/rdma_headers.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::wire {
namespace {

constexpr int kIterations = 20000;

std::string Mutate(std::mt19937_64& rng, std::string s) {
  switch (rng() % 4) {
    case 0:  // replace one byte with anything
      if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
      break;
    case 1:  // replace one byte with a plausible character
      if (!s.empty()) s[rng() % s.size()] = "0123456789abcdefABCDEF:x -/"[rng() % 27];
      break;
    case 2:  // truncate
      s.resize(rng() % (s.size() + 1));
      break;
    default:  // extend
      s.append(rng() % 40, static_cast<char>('0' + rng() % 10));
      break;
  }
  return s;
}

TEST_SUITE("rdmaio") {
  TEST_CASE("mutation: token decoders reject or round-trip, never crash") {
    std::mt19937_64 rng(20261130);
    const std::string dc =
        "00007f1234560000:00800000:1a2b3c4d:0000:00abcd:1:00000000000000000000ffffc0a80107";
    RcToken rc_token;
    rc_token.qpn = 0x123;
    rc_token.addr = 0x1000;
    rc_token.length = 4096;
    const std::string rc = EncodeRcToken(rc_token).value();
    int dc_accepted = 0;
    int rc_accepted = 0;
    for (int i = 0; i < kIterations; ++i) {
      const std::string m_dc = Mutate(rng, dc);
      if (Result<DcToken> t = DecodeDcToken(m_dc); t.ok()) {
        ++dc_accepted;
        CHECK(EncodeDcToken(*t).value() == Lower(m_dc));
      }
      const std::string m_rc = Mutate(rng, rc);
      if (Result<RcToken> t = DecodeRcToken(m_rc); t.ok()) {
        ++rc_accepted;
        // The one documented asymmetry: a zero-length (QP-only) token decodes but is never minted.
        if (t->length == 0) {
          CHECK_FALSE(EncodeRcToken(*t).ok());
        } else {
          CHECK(EncodeRcToken(*t).value_or("") == Lower(m_rc));
        }
      }
    }
    // Some mutations are valid tokens (a hex digit changed to another); most are not.
    CHECK(dc_accepted > 0);
    CHECK(dc_accepted < kIterations);
    CHECK(rc_accepted > 0);
  }

  TEST_CASE("mutation: header decoders and the classifier never crash") {
    std::mt19937_64 rng(7);
    RcPrepareRequest prepare;
    prepare.token.qpn = 1;
    prepare.token.length = 1 << 20;
    prepare.cookie = 42;
    prepare.target = "/b/k";
    prepare.size = 1 << 20;
    const HeaderList good = EncodeRcPrepare(prepare).value();
    for (int i = 0; i < kIterations / 4; ++i) {
      HeaderList h = good;
      auto& victim = h[rng() % h.size()];
      victim.second = Mutate(rng, victim.second);
      Result<RcPrepareRequest> r = DecodeRcPrepare(h);
      if (r.ok()) CHECK(r->size <= r->token.length);

      const std::string reply = Mutate(rng, "206");
      const std::string bytes = Mutate(rng, "8388608");
      ReplyInput in{.op = static_cast<RdmaOp>(rng() % 3),
                    .http_status = static_cast<int>(rng() % 700),
                    .rdma_reply = reply,
                    .bytes_transferred = bytes,
                    .body_length = rng() % 3 == 0 ? 0 : rng(),
                    .etag = "e",
                    .expected_bytes = 8388608};
      const ReplyVerdict v = ClassifyReply(in);
      if (v.kind == ReplyKind::kRdmaDone) CHECK(v.bytes_transferred == 8388608);
      (void)ParseBytesTransferred(bytes);
    }
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

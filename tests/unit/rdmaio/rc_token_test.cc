#include "rdmaio/wire/rc_token.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::wire {
namespace {

RcToken Sample() {
  RcToken t;
  t.transport = RcTransport::kRc;
  t.qpn = 0x000123;
  t.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
  t.rkey = 0xdeadbeef;
  t.addr = 0x0000700000001000ULL;
  t.length = 0x800000;
  t.port = 1;
  t.lid = 0x0017;
  return t;
}

// Written by hand from the layout (docs/protocols/rdma.md §2.2): transport | qpn LE | gid | rkey LE
// | addr LE | len LE | port | lid LE.
constexpr std::string_view kSampleText =
    "01"                                // transport = RC
    "23010000"                          // qpn 0x123
    "fe80000000000000021122fffe334455"  // gid
    "efbeadde"                          // rkey
    "0010000000700000"                  // addr
    "0000800000000000"                  // len 8 MiB
    "01"                                // port
    "1700";                             // lid 0x17

std::string SampleText() { return std::string(kSampleText); }

void CheckRejected(std::string_view text, std::string_view needle) {
  CAPTURE(text);
  Result<RcToken> r = DecodeRcToken(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(r.status().message().find(needle) != std::string_view::npos, r.status().ToString());
}

TEST_SUITE("rdmaio") {
  TEST_CASE("rc token: little-endian layout, 88 hex characters") {
    REQUIRE(SampleText().size() == kRcTokenHexLength);
    Result<std::string> text = EncodeRcToken(Sample());
    REQUIRE(text.ok());
    CHECK(*text == SampleText());
    Result<RcToken> back = DecodeRcToken(SampleText());
    REQUIRE(back.ok());
    CHECK(*back == Sample());
  }

  TEST_CASE("rc token: round trip at the edges") {
    RcToken t;
    t.transport = RcTransport::kDc;
    t.qpn = kMaxQpn;
    t.gid.fill(0xab);
    t.rkey = 0xffffffff;
    t.addr = UINT64_MAX;
    t.length = 1;
    t.port = 0xff;
    t.lid = 0xffff;
    Result<std::string> text = EncodeRcToken(t);
    REQUIRE(text.ok());
    Result<RcToken> back = DecodeRcToken(*text);
    REQUIRE(back.ok());
    CHECK(*back == t);
  }

  TEST_CASE("rc token: encoder refuses tokens it must never mint") {
    RcToken t = Sample();
    t.qpn = kMaxQpn + 1;
    CHECK_FALSE(EncodeRcToken(t).ok());
    t = Sample();
    t.length = 0;
    CHECK_FALSE(EncodeRcToken(t).ok());
    t = Sample();
    t.addr = UINT64_MAX;
    t.length = 2;
    CHECK_FALSE(EncodeRcToken(t).ok());
    t = Sample();
    t.transport = static_cast<RcTransport>(7);
    CHECK_FALSE(EncodeRcToken(t).ok());
  }

  TEST_CASE("rc token: hostile input") {
    const std::string good = SampleText();
    CheckRejected("", "expected 88 hex characters, got 0");
    CheckRejected(good.substr(0, 87), "got 87");
    CheckRejected(good + "00", "got 90");
    CheckRejected(" " + good.substr(1), "non-hex character at offset 0");
    std::string bad = good;
    bad[51] = 'G';
    CheckRejected(bad, "offset 51");
    bad = good;
    bad[0] = '0';
    bad[1] = '2';  // transport 2
    CheckRejected(bad, "unknown transport");
    bad = good;
    bad.replace(2, 8, "ffffffff");  // qpn 0xffffffff: not a 24-bit QPN
    CheckRejected(bad, "qpn wider than 24 bits");
    bad = good;
    bad.replace(50, 16, "ffffffffffffffff");  // addr at the top, len 8 MiB
    CheckRejected(bad, "wraps");
    CheckRejected(std::string(100000, 'f'), "expected 88");
  }

  TEST_CASE("rc token: a zero-length server token decodes (QP only)") {
    std::string text = SampleText();
    text.replace(66, 16, std::string(16, '0'));
    Result<RcToken> r = DecodeRcToken(text);
    REQUIRE(r.ok());
    CHECK(r->length == 0);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

#include "rdmaio/wire/rc_control.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::wire {
namespace {

RcToken ClientToken() {
  RcToken t;
  t.qpn = 0x11;
  t.rkey = 0x1234;
  t.addr = 0x7000'0000'0000ULL;
  t.length = 8 << 20;
  return t;
}

RcPrepareRequest Prepare() {
  RcPrepareRequest r;
  r.token = ClientToken();
  r.psn = 0xabcdef;
  r.cookie = 0x0123456789abcdefULL;
  r.op = RcOp::kGet;
  r.target = "/bucket/dir/obj%20name";
  r.size = 4 << 20;
  r.offset = 123456789;
  return r;
}

HeaderList Without(HeaderList h, std::string_view name) {
  std::erase_if(h, [&](const auto& kv) { return kv.first == name; });
  return h;
}

HeaderList With(HeaderList h, std::string_view name, std::string value) {
  for (auto& kv : h) {
    if (kv.first == name) kv.second = std::move(value);
  }
  return h;
}

void CheckRejected(const Result<RcPrepareRequest>& r, std::string_view needle) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(r.status().message().find(needle) != std::string_view::npos, r.status().ToString());
}

TEST_SUITE("rdmaio") {
  TEST_CASE("rc control: PREPARE headers and round trip") {
    Result<HeaderList> h = EncodeRcPrepare(Prepare());
    REQUIRE(h.ok());
    CHECK(FindHeader(*h, "x-amz-rdma-protocol") == "hipobj-rc-v2");
    CHECK(FindHeader(*h, "x-amz-rdma-psn") == "abcdef");
    CHECK(FindHeader(*h, "x-amz-rdma-cookie") == "0123456789abcdef");
    CHECK(FindHeader(*h, "x-amz-rdma-op") == "GET");
    CHECK(FindHeader(*h, "x-amz-rdma-size") == "4194304");
    CHECK(FindHeader(*h, "x-amz-rdma-offset") == "123456789");
    CHECK(FindHeader(*h, "x-amz-rdma-token")->size() == kRcTokenHexLength);
    Result<RcPrepareRequest> back = DecodeRcPrepare(*h);
    REQUIRE_MESSAGE(back.ok(), back.status().ToString());
    CHECK(back->token == Prepare().token);
    CHECK(back->psn == Prepare().psn);
    CHECK(back->cookie == Prepare().cookie);
    CHECK(back->op == RcOp::kGet);
    CHECK(back->target == Prepare().target);
    CHECK(back->size == Prepare().size);
    CHECK(back->offset == Prepare().offset);
  }

  TEST_CASE("rc control: PREPARE encoder refuses invalid requests") {
    RcPrepareRequest r = Prepare();
    r.psn = kMaxPsn + 1;
    CHECK_FALSE(EncodeRcPrepare(r).ok());
    r = Prepare();
    r.cookie = 0;
    CHECK_FALSE(EncodeRcPrepare(r).ok());
    r = Prepare();
    r.size = r.token.length + 1;  // would overrun the client's window
    CHECK_FALSE(EncodeRcPrepare(r).ok());
    r = Prepare();
    r.size = 0;
    CHECK_FALSE(EncodeRcPrepare(r).ok());
    r = Prepare();
    r.token.transport = RcTransport::kDc;
    CHECK_FALSE(EncodeRcPrepare(r).ok());
    for (const std::string& target :
         std::vector<std::string>{"", "bucket/key", "/", "//x", "/?x", "/b/k with space",
                                  "/b/k\r\nx-evil: 1", std::string(kMaxTargetLength + 1, 'a')}) {
      CAPTURE(target);
      r = Prepare();
      r.target = target;
      CHECK_FALSE(EncodeRcPrepare(r).ok());
    }
  }

  TEST_CASE("rc control: PREPARE decoder, hostile headers") {
    const HeaderList good = EncodeRcPrepare(Prepare()).value();
    CheckRejected(DecodeRcPrepare({}), "x-amz-rdma-protocol: missing");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-protocol", "hipobj-rc-v1")),
                  "unsupported protocol");
    for (std::string_view name :
         {"x-amz-rdma-token", "x-amz-rdma-psn", "x-amz-rdma-cookie", "x-amz-rdma-op",
          "x-amz-rdma-target", "x-amz-rdma-size", "x-amz-rdma-offset"}) {
      CAPTURE(name);
      CheckRejected(DecodeRcPrepare(Without(good, name)), "missing");
    }
    HeaderList twice = good;
    twice.emplace_back("X-Amz-Rdma-Cookie", "1");
    CheckRejected(DecodeRcPrepare(twice), "appears twice");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-psn", "1000000")), "out of range");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-psn", "")), "hex digits");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-cookie", "0")), "non-zero");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-cookie", "1ffffffffffffffff")),
                  "hex digits");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-op", "DELETE")), "GET or PUT");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-size", "-1")), "decimal");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-size", "99999999999999999999")),
                  "out of range");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-size", "8388609")), "window");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-offset", "18446744073709551615")),
                  "wraps");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-token", "00")), "rc token");
    CheckRejected(DecodeRcPrepare(With(good, "x-amz-rdma-target", std::string(1 << 20, 'a'))),
                  "too long");
    // Optional 0x and surrounding whitespace are tolerated on hex values.
    Result<RcPrepareRequest> lenient = DecodeRcPrepare(With(good, "x-amz-rdma-psn", " 0xABCDEF "));
    REQUIRE(lenient.ok());
    CHECK(lenient->psn == 0xabcdef);
  }

  TEST_CASE("rc control: PREPARE reply, READY, READY reply and CANCEL round trips") {
    RcPrepareReply reply;
    reply.server_token = ClientToken();
    reply.server_token.qpn = 0x99;
    reply.session = "s-0001";
    reply.psn = 0x10;
    reply.qpn = 0x99;
    reply.mr_addr = 0xdead0000;
    reply.mr_rkey = 0xbeef;
    Result<HeaderList> rh = EncodeRcPrepareReply(reply);
    REQUIRE(rh.ok());
    CHECK(FindHeader(*rh, "x-amz-rdma-reply")->substr(0, 4) == "200:");
    Result<RcPrepareReply> rback = DecodeRcPrepareReply(*rh);
    REQUIRE_MESSAGE(rback.ok(), rback.status().ToString());
    CHECK(rback->server_token == reply.server_token);
    CHECK(rback->session == "s-0001");
    CHECK(rback->psn == 0x10);
    CHECK(rback->qpn == 0x99);
    CHECK(rback->mr_addr == 0xdead0000);
    CHECK(rback->mr_rkey == 0xbeef);

    RcReadyRequest ready{.session = "s-0001", .cookie = 7, .qpn = 0x11, .mr_addr = 1, .mr_rkey = 2};
    Result<RcReadyRequest> ready_back = DecodeRcReady(EncodeRcReady(ready).value());
    REQUIRE(ready_back.ok());
    CHECK(ready_back->session == "s-0001");
    CHECK(ready_back->cookie == 7);
    CHECK(ready_back->qpn == 0x11);
    CHECK(ready_back->mr_addr == 1);
    CHECK(ready_back->mr_rkey == 2);

    RcReadyReply done{.bytes_transferred = 4 << 20,
                      .cookie = 7,
                      .etag = "\"abc\"",
                      .version_id = "v1",
                      .checksum = "AAAAAAAAAAA="};
    Result<RcReadyReply> done_back = DecodeRcReadyReply(EncodeRcReadyReply(done).value());
    REQUIRE(done_back.ok());
    CHECK(done_back->bytes_transferred == done.bytes_transferred);
    CHECK(done_back->etag == "\"abc\"");
    CHECK(done_back->version_id == "v1");
    CHECK(done_back->checksum == "AAAAAAAAAAA=");
    CHECK(CheckRcReadyReply(*done_back, 7, 4 << 20).ok());
    CHECK(CheckRcReadyReply(*done_back, 8, 4 << 20).code() == StatusCode::kDataLoss);
    CHECK(CheckRcReadyReply(*done_back, 7, 4 << 20 | 1).code() == StatusCode::kDataLoss);

    RcCancelRequest cancel{.session = "s-0001", .cookie = 7};
    Result<RcCancelRequest> cancel_back = DecodeRcCancel(EncodeRcCancel(cancel).value());
    REQUIRE(cancel_back.ok());
    CHECK(cancel_back->session == "s-0001");
    CHECK(cancel_back->cookie == 7);
  }

  TEST_CASE("rc control: replies and follow-ups reject hostile headers") {
    // A PREPARE reply must be 200:<token>; a bare 200 or a decline is not one.
    CHECK_FALSE(DecodeRcPrepareReply({{"x-amz-rdma-reply", "200"}}).ok());
    CHECK_FALSE(DecodeRcPrepareReply({{"x-amz-rdma-reply", "501"}}).ok());
    CHECK_FALSE(DecodeRcPrepareReply({}).ok());
    RcPrepareReply reply;
    reply.server_token = ClientToken();
    reply.session = "s";
    HeaderList good = EncodeRcPrepareReply(reply).value();
    CHECK(DecodeRcPrepareReply(good).ok());
    CHECK_FALSE(DecodeRcPrepareReply(With(good, "x-amz-rdma-qpn", "1000000")).ok());
    CHECK_FALSE(DecodeRcPrepareReply(With(good, "x-amz-rdma-mr-rkey", "100000000")).ok());
    CHECK_FALSE(DecodeRcPrepareReply(With(good, "x-amz-rdma-session", "a b")).ok());
    CHECK_FALSE(DecodeRcPrepareReply(With(good, "x-amz-rdma-session", std::string(300, 's'))).ok());
    reply.session = "";
    CHECK_FALSE(EncodeRcPrepareReply(reply).ok());

    CHECK_FALSE(DecodeRcReady({{"x-amz-rdma-session", "s"}}).ok());
    CHECK_FALSE(DecodeRcReady({{"x-amz-rdma-session", "s"},
                               {"x-amz-rdma-cookie", "0"},
                               {"x-amz-rdma-qpn", "1"},
                               {"x-amz-rdma-mr-addr", "1"},
                               {"x-amz-rdma-mr-rkey", "1"}})
                    .ok());
    CHECK_FALSE(
        DecodeRcReadyReply({{"x-amz-rdma-bytes-transferred", "1"}, {"x-amz-rdma-cookie", "1"}})
            .ok());  // no etag
    CHECK_FALSE(DecodeRcReadyReply({{"x-amz-rdma-bytes-transferred", "x"},
                                    {"x-amz-rdma-cookie", "1"},
                                    {"x-amz-rdma-etag", "e"}})
                    .ok());
    CHECK_FALSE(DecodeRcCancel({{"x-amz-rdma-cookie", "1"}}).ok());
    CHECK_FALSE(EncodeRcCancel({.session = "s", .cookie = 0}).ok());
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

#include "rdmaio/wire/rdma_headers.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::wire {
namespace {

constexpr std::string_view kDcText =
    "00007f1234560000:00800000:1a2b3c4d:0000:00abcd:1:00000000000000000000ffffc0a80107";

TEST_SUITE("rdmaio") {
  TEST_CASE("headers: lookup is case-insensitive; duplicates are refused where it matters") {
    HeaderList h = {
        {"X-Amz-Rdma-Reply", "200"}, {"x-amz-rdma-token", "a"}, {"x-amz-rdma-token", "b"}};
    CHECK(FindHeader(h, "x-amz-rdma-reply") == "200");
    CHECK(FindHeader(h, "x-amz-rdma-token") == "a");
    CHECK_FALSE(FindHeader(h, "x-amz-rdma-bytes").has_value());
    CHECK(FindSingleHeader(h, "x-amz-rdma-token").status().code() == StatusCode::kInvalidArgument);
    Result<std::optional<std::string_view>> single = FindSingleHeader(h, "X-AMZ-RDMA-REPLY");
    REQUIRE(single.ok());
    CHECK(*single == "200");
  }

  TEST_CASE("headers: a DC data request carries the bare token and UNSIGNED-PAYLOAD only") {
    Result<DcToken> token = DecodeDcToken(kDcText);
    REQUIRE(token.ok());
    Result<HeaderList> h = DcDataRequestHeaders(*token);
    REQUIRE(h.ok());
    CHECK(*h == HeaderList{{"x-amz-rdma-token", std::string(kDcText)},
                           {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}});
    CHECK_FALSE(FindHeader(*h, "x-amz-rdma-agent").has_value());

    // Server side.
    Result<std::optional<DcToken>> decoded = DecodeDcDataRequest(*h);
    REQUIRE(decoded.ok());
    REQUIRE(decoded->has_value());
    CHECK(**decoded == *token);
    Result<std::optional<DcToken>> plain = DecodeDcDataRequest({{"range", "bytes=0-9"}});
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->has_value());
    CHECK_FALSE(DecodeDcDataRequest({{"x-amz-rdma-token", "junk"}}).ok());
    CHECK_FALSE(DecodeDcDataRequest({{"x-amz-rdma-token", std::string(kDcText)},
                                     {"x-amz-rdma-token", std::string(kDcText)}})
                    .ok());
    DcToken zero = *token;
    zero.size = 0;
    CHECK_FALSE(DcDataRequestHeaders(zero).ok());
  }

  TEST_CASE("headers: x-amz-rdma-reply values") {
    struct Row {
      std::string_view value;
      RdmaReply::Kind kind;
      int code;
    };
    for (const Row& row :
         {Row{"200", RdmaReply::Kind::kSuccess, 200}, Row{"204", RdmaReply::Kind::kSuccess, 204},
          Row{" 206\t", RdmaReply::Kind::kSuccess, 206}, Row{"ok", RdmaReply::Kind::kSuccess, 0},
          Row{"OK", RdmaReply::Kind::kSuccess, 0}, Row{"501", RdmaReply::Kind::kDeclined, 501},
          Row{"err", RdmaReply::Kind::kFailed, 0}, Row{"500", RdmaReply::Kind::kFailed, 500},
          Row{"400", RdmaReply::Kind::kFailed, 400}}) {
      CAPTURE(row.value);
      Result<RdmaReply> r = ParseRdmaReply(row.value);
      REQUIRE_MESSAGE(r.ok(), r.status().ToString());
      CHECK(r->kind == row.kind);
      CHECK(r->code == row.code);
      CHECK_FALSE(r->server_token.has_value());
    }
  }

  TEST_CASE("headers: 200:<rc token> carries the server token") {
    RcToken server;
    server.qpn = 0x42;
    server.length = 4096;
    server.addr = 0x1000;
    Result<std::string> text = EncodeRcToken(server);
    REQUIRE(text.ok());
    Result<RdmaReply> r = ParseRdmaReply("200:" + *text);
    REQUIRE(r.ok());
    CHECK(r->kind == RdmaReply::Kind::kSuccess);
    REQUIRE(r->server_token.has_value());
    CHECK(*r->server_token == server);
    CHECK_FALSE(ParseRdmaReply("200:" + text->substr(1)).ok());
    CHECK_FALSE(ParseRdmaReply("501:" + *text).ok());
    CHECK_FALSE(ParseRdmaReply("200:").ok());
  }

  TEST_CASE("headers: malformed replies are errors, not guesses") {
    for (std::string_view v : {"", " ", "2000", "20", "2x0", "-20", "201", "299", "099", "okay",
                               "200 OK", "0x1f", "\xff\xfe\xfd"}) {
      CAPTURE(v);
      Result<RdmaReply> r = ParseRdmaReply(v);
      CHECK_FALSE(r.ok());
      if (!r.ok()) CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
    CHECK_FALSE(ParseRdmaReply(std::string(70000, '2')).ok());
  }

  TEST_CASE("headers: bytes transferred, N or N/M") {
    CHECK(ParseBytesTransferred("8388608").value() == 8388608);
    CHECK(ParseBytesTransferred(" 100/1000 ").value() == 100);
    CHECK(ParseBytesTransferred("0").value() == 0);
    CHECK(ParseBytesTransferred("18446744073709551615").value() == UINT64_MAX);
    for (std::string_view v : {"", "/", "1/", "/1", "1/x", "-1", "+1", "1e6", "0x10", "1 2",
                               "18446744073709551616", "99999999999999999999999", "1/2/3"}) {
      CAPTURE(v);
      CHECK_FALSE(ParseBytesTransferred(v).ok());
    }
  }

  TEST_CASE("headers: the current byte-count header wins over the legacy one") {
    Result<std::optional<uint64_t>> both =
        FindBytesTransferred({{"x-amz-rdma-bytes", "5"}, {"x-amz-rdma-bytes-transferred", "7"}});
    REQUIRE(both.ok());
    CHECK(*both == std::optional<uint64_t>(7));
    Result<std::optional<uint64_t>> legacy = FindBytesTransferred({{"x-amz-rdma-bytes", "5/9"}});
    REQUIRE(legacy.ok());
    CHECK(*legacy == std::optional<uint64_t>(5));
    Result<std::optional<uint64_t>> none = FindBytesTransferred({});
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
    CHECK_FALSE(FindBytesTransferred({{"x-amz-rdma-bytes-transferred", "abc"}}).ok());
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

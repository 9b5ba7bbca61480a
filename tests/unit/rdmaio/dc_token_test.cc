#include "rdmaio/wire/dc_token.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::wire {
namespace {

DcToken Sample() {
  DcToken t;
  t.addr = 0x00007f1234560000ULL;
  t.size = 8 * 1024 * 1024;
  t.rkey = 0x1a2b3c4d;
  t.lid = 0;
  t.dctn = 0x00abcd;
  t.gid_present = true;
  t.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 7};  // ::ffff:192.168.1.7
  return t;
}

// The same descriptor written out by hand from the field table (docs/protocols/rdma.md §2.1).
constexpr std::string_view kSampleText =
    "00007f1234560000:00800000:1a2b3c4d:0000:00abcd:1:00000000000000000000ffffc0a80107";

void CheckRejected(std::string_view text, std::string_view needle) {
  CAPTURE(text);
  Result<DcToken> r = DecodeDcToken(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(r.status().message().find(needle) != std::string_view::npos, r.status().ToString());
}

std::string WithChar(size_t at, char c) {
  std::string s(kSampleText);
  s[at] = c;
  return s;
}

TEST_SUITE("rdmaio") {
  TEST_CASE("dc token: encodes the 81-character layout field by field") {
    Result<std::string> text = EncodeDcToken(Sample());
    REQUIRE(text.ok());
    CHECK(text->size() == kDcTokenLength);
    CHECK(*text == kSampleText);
  }

  TEST_CASE("dc token: round trip, including extreme field values") {
    DcToken max;
    max.addr = 0;
    max.size = kDcMaxWindowBytes;
    max.rkey = 0xffffffff;
    max.lid = 0xffff;
    max.dctn = kMaxDctn;
    max.gid_present = false;
    max.gid.fill(0xff);
    for (const DcToken& t : {Sample(), max}) {
      Result<std::string> text = EncodeDcToken(t);
      REQUIRE(text.ok());
      Result<DcToken> back = DecodeDcToken(*text);
      REQUIRE_MESSAGE(back.ok(), back.status().ToString());
      CHECK(*back == t);
    }
  }

  TEST_CASE("dc token: upper-case hex decodes (servers use strtoull)") {
    std::string upper(kSampleText);
    for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'f' ? c - 'a' + 'A' : c);
    Result<DcToken> r = DecodeDcToken(upper);
    REQUIRE(r.ok());
    CHECK(*r == Sample());
  }

  TEST_CASE("dc token: encoder refuses what the fields cannot carry") {
    DcToken t = Sample();
    t.size = kDcMaxWindowBytes + 1;  // 4 GiB: one more than the 32-bit field holds
    CHECK(EncodeDcToken(t).status().code() == StatusCode::kInvalidArgument);
    t = Sample();
    t.size = 0;
    CHECK_FALSE(EncodeDcToken(t).ok());
    t = Sample();
    t.dctn = kMaxDctn + 1;
    CHECK_FALSE(EncodeDcToken(t).ok());
    t = Sample();
    t.addr = UINT64_MAX - 10;  // window would wrap
    CHECK_FALSE(EncodeDcToken(t).ok());
    t.addr = UINT64_MAX - (t.size - 1);  // ends exactly at the top: fine
    CHECK(EncodeDcToken(t).ok());
  }

  TEST_CASE("dc token: wrong lengths, including the legacy suffix form") {
    CheckRejected("", "expected 81 characters, got 0");
    CheckRejected(kSampleText.substr(0, 80), "got 80");
    CheckRejected(std::string(kSampleText) + "0", "got 82");
    CheckRejected(std::string(kSampleText) + ":00007f1234560000:0000000000800000",
                  "legacy ':addr:size' suffix");
    CheckRejected(std::string(1 << 20, 'a'), "expected 81 characters");
  }

  TEST_CASE("dc token: separators must be where the widths put them") {
    for (size_t colon : {16u, 25u, 34u, 39u, 46u, 48u}) {
      CHECK(kSampleText[colon] == ':');
      CheckRejected(WithChar(colon, '0'), "expected ':'");
    }
    // A colon shifted by one: right length, wrong layout.
    std::string shifted(kSampleText);
    shifted[16] = '0';
    shifted[15] = ':';
    CheckRejected(shifted, "expected ':' after field addr");
  }

  TEST_CASE("dc token: each field rejects non-hex characters") {
    CheckRejected(WithChar(3, 'g'), "field addr");
    CheckRejected(WithChar(20, 'x'), "field size");
    CheckRejected(WithChar(30, ' '), "field rkey");
    CheckRejected(WithChar(36, '-'), "field lid");
    CheckRejected(WithChar(41, '+'), "field dctn");
    CheckRejected(WithChar(47, 'z'), "field gid_present");
    CheckRejected(WithChar(60, '\0'), "field gid");
    CheckRejected(WithChar(80, '\xff'), "field gid");
  }

  TEST_CASE("dc token: semantic checks on decode") {
    CheckRejected(WithChar(47, '2'), "gid_present must be 0 or 1");
    CheckRejected(
        "00007f1234560000:00000000:1a2b3c4d:0000:00abcd:1:00000000000000000000ffffc0a80107",
        "zero-size window");
    CheckRejected(
        "ffffffffffffff00:00001000:1a2b3c4d:0000:00abcd:1:00000000000000000000ffffc0a80107",
        "wraps");
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

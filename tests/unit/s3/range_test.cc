#include "s3/protocol/range.h"

#include <optional>
#include <string>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

std::optional<ByteRange> Resolve(std::string_view header, uint64_t size) {
  Result<std::optional<ByteRange>> r = ResolveRangeHeader(header, size);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return *r;
}

void CheckUnsatisfiable(std::string_view header, uint64_t size) {
  CAPTURE(header);
  CAPTURE(size);
  Result<std::optional<ByteRange>> r = ResolveRangeHeader(header, size);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kOutOfRange);
  CHECK(r.status().detail().s3_code == "InvalidRange");
  CHECK(r.status().detail().http_status == 416);
}

TEST_SUITE("s3") {
  TEST_CASE("range: FormatRangeHeader is inclusive") {
    CHECK(FormatRangeHeader({.offset = 0, .length = 100}) == "bytes=0-99");
    CHECK(FormatRangeHeader({.offset = 8388608, .length = 1}) == "bytes=8388608-8388608");
    // offset + length - 1 past 2^64 saturates instead of wrapping to a small "last".
    CHECK(FormatRangeHeader({.offset = 10, .length = UINT64_MAX}) ==
          "bytes=10-18446744073709551615");
    CHECK(FormatRangeHeader({.offset = UINT64_MAX, .length = 2}) ==
          "bytes=18446744073709551615-18446744073709551615");
  }

  TEST_CASE("range: the three forms resolve against the object size") {
    CHECK(Resolve("bytes=0-99", 1000) == ByteRange{0, 100});
    CHECK(Resolve("bytes=10-", 1000) == ByteRange{10, 990});
    CHECK(Resolve("bytes=-100", 1000) == ByteRange{900, 100});
    CHECK(Resolve("bytes=999-999", 1000) == ByteRange{999, 1});
    CHECK(Resolve("  Bytes = 5 - 9 ", 1000) == ByteRange{5, 5});
  }

  TEST_CASE("range: a last byte past the end is clamped") {
    CHECK(Resolve("bytes=900-5000", 1000) == ByteRange{900, 100});
    CHECK(Resolve("bytes=-5000", 1000) == ByteRange{0, 1000});
    CHECK(Resolve("bytes=0-99999999999999999999999", 10) == ByteRange{0, 10});
  }

  TEST_CASE("range: unsatisfiable ranges are kOutOfRange (416)") {
    CheckUnsatisfiable("bytes=1000-", 1000);
    CheckUnsatisfiable("bytes=1000-2000", 1000);
    CheckUnsatisfiable("bytes=99999999999999999999999-", 1000);
    CheckUnsatisfiable("bytes=-0", 1000);
    CheckUnsatisfiable("bytes=0-0", 0);
    CheckUnsatisfiable("bytes=-1", 0);
  }

  TEST_CASE("range: invalid and multi-range headers are ignored like S3 does") {
    for (const char* h :
         {"", "bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=5-1", "bytes=0-1,5-6", "bytes=1",
          "items=0-1", "bytes 0-1", "bytes=0x1-2", "bytes=--1", "bytes=1-2-3"}) {
      CAPTURE(h);
      CHECK_FALSE(Resolve(h, 1000).has_value());
    }
  }

  TEST_CASE("range: Content-Range parse and format") {
    Result<ContentRange> full = ParseContentRange("bytes 0-99/1000");
    REQUIRE(full.ok());
    CHECK(full->first == 0);
    CHECK(full->last == 99);
    CHECK(full->total == 1000);
    CHECK(full->total_known);

    Result<ContentRange> unknown = ParseContentRange("bytes 100-199/*");
    REQUIRE(unknown.ok());
    CHECK(unknown->first == 100);
    CHECK(unknown->last == 199);
    CHECK_FALSE(unknown->total_known);
    CHECK(unknown->total == 0);

    Result<ContentRange> unsat = ParseContentRange("bytes */1000");
    REQUIRE(unsat.ok());
    CHECK(unsat->total == 1000);
    CHECK(unsat->first == 0);
    CHECK(unsat->last == 0);

    for (const char* bad :
         {"", "bytes", "bytes 0-99", "bytes 99-0/1000", "bytes 0-1000/1000", "bytes */*",
          "items 0-1/2", "bytes a-b/c", "bytes 0-99/-1", "bytes 0-99/99999999999999999999999999"}) {
      CAPTURE(bad);
      CHECK(ParseContentRange(bad).status().code() == StatusCode::kInvalidArgument);
    }

    CHECK(FormatContentRange({.offset = 0, .length = 100}, 1000) == "bytes 0-99/1000");
    CHECK(FormatContentRange({.offset = 0, .length = 0}, 1000) == "bytes */1000");
  }
}

}  // namespace
}  // namespace reelfs::s3

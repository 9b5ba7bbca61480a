#include "s3/protocol/restore_header.h"

#include <chrono>
#include <string>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

WallTime Utc(int y, unsigned m, unsigned d) {
  return std::chrono::sys_days{std::chrono::year{y} / m / d};
}

RestoreInfo Parse(std::string_view value) {
  Result<RestoreInfo> r = ParseRestoreHeader(value);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return *r;
}

TEST_SUITE("s3") {
  TEST_CASE("restore: AWS forms") {
    CHECK(Parse(R"(ongoing-request="true")") == RestoreInfo{.ongoing = true});
    const RestoreInfo restored =
        Parse(R"(ongoing-request="false", expiry-date="Fri, 21 Dec 2012 00:00:00 GMT")");
    CHECK_FALSE(restored.ongoing);
    REQUIRE(restored.expiry.has_value());
    CHECK(*restored.expiry == Utc(2012, 12, 21));
    CHECK_FALSE(restored.expiry_is_placeholder);
  }

  TEST_CASE("restore: versitygw generations") {
    // Online files, every version since PR #1978: the fixed 2050 expiry.
    const RestoreInfo online =
        Parse(R"(ongoing-request="false", expiry-date="Fri, 2 Dec 2050 00:00:00 GMT")");
    CHECK_FALSE(online.ongoing);
    CHECK(online.expiry == Utc(2050, 12, 2));
    CHECK(online.expiry_is_placeholder);
    // 2026-03 to 2026-04: no expiry at all.
    CHECK(Parse(R"(ongoing-request="false")") == RestoreInfo{.ongoing = false});
    // Before 2026-03: bare words.
    CHECK(Parse("true") == RestoreInfo{.ongoing = true});
    CHECK(Parse("false") == RestoreInfo{.ongoing = false});
    CHECK(Parse(" TRUE ") == RestoreInfo{.ongoing = true});
    CHECK(Parse(R"("false")") == RestoreInfo{.ongoing = false});
  }

  TEST_CASE("restore: key case, order, whitespace and unknown keys") {
    const WallTime when = Utc(2012, 12, 21);
    for (
        const char* v : {
            R"(expiry-date="Fri, 21 Dec 2012 00:00:00 GMT", ongoing-request="false")",
            R"(Ongoing-Request="FALSE",Expiry-Date="Fri, 21 Dec 2012 00:00:00 GMT")",
            R"(  ongoing-request = "false" ,   expiry-date = "Fri, 21 Dec 2012 00:00:00 GMT"  )",
            R"(ongoing-request=false, expiry-date="Fri, 21 Dec 2012 00:00:00 GMT")",
            R"(restore-request-date="x, y", ongoing-request="false", expiry-date="Fri, 21 Dec 2012 00:00:00 GMT", tier=Bulk)",
            R"(ongoing-request="false", expiry-date="2012-12-21T00:00:00.000Z")",
        }) {
      CAPTURE(v);
      const RestoreInfo info = Parse(v);
      CHECK_FALSE(info.ongoing);
      CHECK(info.expiry == when);
      CHECK_FALSE(info.expiry_is_placeholder);
    }
  }

  TEST_CASE("restore: malformed values are kInvalidArgument") {
    for (const std::string_view v : {
             "",
             "   ",
             "maybe",
             R"(ongoing-request="maybe")",
             R"(ongoing-request="")",
             R"(ongoing-request)",
             R"(expiry-date="Fri, 21 Dec 2012 00:00:00 GMT")",
             R"(ongoing-request="false", expiry-date="not a date")",
             R"(ongoing-request="false", expiry-date="Fri, 21 Dec 2012 00:00:00 GMT)",
             R"(ongoing-request="true", ongoing-request="false")",
             R"(ongoing-request="false"x)",
             R"(="true")",
             R"(,,,,)",
         }) {
      CAPTURE(v);
      Result<RestoreInfo> r = ParseRestoreHeader(v);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
    CHECK_FALSE(ParseRestoreHeader(std::string_view("ongoing-request=\"true\"\0x", 24)).ok());
    const std::string huge(1 << 20, '"');
    CHECK_FALSE(ParseRestoreHeader(huge).ok());
  }

  TEST_CASE("restore: FormatRestoreHeader writes the AWS form and parses back") {
    CHECK(FormatRestoreHeader({.ongoing = true}) == R"(ongoing-request="true")");
    CHECK(FormatRestoreHeader({.ongoing = false}) == R"(ongoing-request="false")");
    const RestoreInfo restored{.ongoing = false, .expiry = Utc(2012, 12, 21)};
    CHECK(FormatRestoreHeader(restored) ==
          R"(ongoing-request="false", expiry-date="Fri, 21 Dec 2012 00:00:00 GMT")");
    CHECK(Parse(FormatRestoreHeader(restored)) == restored);
  }
}

}  // namespace
}  // namespace reelfs::s3

#include "s3/protocol/time_format.h"

#include <chrono>
#include <string>

#include <doctest/doctest.h>

#include "tests/fakes/utc_time.h"

namespace reelfs::s3 {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

using testing::Utc;

TEST_SUITE("s3") {
  TEST_CASE("time: ISO 8601 as S3 writes it in XML") {
    CHECK(FormatIso8601(Utc(2009, 10, 12, 17, 50, 30)) == "2009-10-12T17:50:30.000Z");
    CHECK(FormatIso8601(Utc(2009, 10, 12, 17, 50, 30) + 123456us) == "2009-10-12T17:50:30.123Z");
    CHECK(FormatIso8601(Utc(1970, 1, 1)) == "1970-01-01T00:00:00.000Z");
    CHECK(FormatIso8601(Utc(1969, 12, 31, 23, 59, 59) + 500ms) == "1969-12-31T23:59:59.500Z");

    CHECK(*ParseIso8601("2009-10-12T17:50:30.000Z") == Utc(2009, 10, 12, 17, 50, 30));
    CHECK(*ParseIso8601("2009-10-12T17:50:30Z") == Utc(2009, 10, 12, 17, 50, 30));
    CHECK(*ParseIso8601("2009-10-12T17:50:30.5Z") == Utc(2009, 10, 12, 17, 50, 30) + 500ms);
    CHECK(*ParseIso8601("2009-10-12T17:50:30.123456789Z") ==
          Utc(2009, 10, 12, 17, 50, 30) + 123456789ns);
    CHECK(*ParseIso8601("2009-10-12T19:50:30+02:00") == Utc(2009, 10, 12, 17, 50, 30));
    CHECK(*ParseIso8601("2024-02-29T00:00:00Z") == Utc(2024, 2, 29));
  }

  TEST_CASE("time: ISO 8601 rejects what is not a time") {
    for (const char* bad :
         {"", "2009-10-12", "2009-10-12T17:50:30", "2009-10-12T17:50:30.Z", "2009-13-12T17:50:30Z",
          "2009-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2009-10-12T24:00:00Z",
          "2009-10-12T17:50:30Zjunk", "2009-10-12 17:50:30Z", "20091012T175030Z",
          "Mon, 12 Oct 2009 17:50:30 GMT"}) {
      CAPTURE(bad);
      Result<system_clock::time_point> r = ParseIso8601(bad);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("time: HTTP dates (RFC 9110 §5.6.7)") {
    const auto t = Utc(1994, 11, 6, 8, 49, 37);
    CHECK(FormatHttpDate(t) == "Sun, 06 Nov 1994 08:49:37 GMT");
    CHECK(FormatHttpDate(Utc(2050, 12, 2)) == "Fri, 02 Dec 2050 00:00:00 GMT");
    CHECK(*ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") == t);
    CHECK(*ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT") == t);  // RFC 850
    CHECK(*ParseHttpDate("Sun Nov  6 08:49:37 1994") == t);        // asctime
    // versitygw writes a one-digit day.
    CHECK(*ParseHttpDate("Fri, 2 Dec 2050 00:00:00 GMT") == Utc(2050, 12, 2));
    CHECK(*ParseHttpDate("Fri, 21 Dec 2012 00:00:00 GMT") == Utc(2012, 12, 21));
    CHECK(*ParseHttpDate(FormatHttpDate(Utc(2038, 1, 19, 3, 14, 8))) == Utc(2038, 1, 19, 3, 14, 8));
  }

  TEST_CASE("time: HTTP dates reject garbage") {
    for (const char* bad :
         {"", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 PST",
          "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
          "Sun, 06 Nov 1994 08:49 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
          "Sun, 06 Nov 1994 08:49:37 GMT trailing", "2009-10-12T17:50:30.000Z"}) {
      CAPTURE(bad);
      Result<system_clock::time_point> r = ParseHttpDate(bad);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
  }

  // Found by tests/fuzz (tape_hints): an x-amz-restore expiry in 4024 overflowed the nanosecond
  // count of system_clock (undefined behaviour) instead of being refused.
  TEST_CASE("time: dates outside system_clock's range are refused, not overflowed") {
    for (const char* bad : {"Fri, 21 Dec 4024 00:00:00 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
                            "Fri, 31 Dec 9999 23:59:59 GMT"}) {
      CAPTURE(bad);
      Result<system_clock::time_point> r = ParseHttpDate(bad);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
    for (const char* bad : {"4024-12-21T00:00:00.000Z", "0000-01-01T00:00:00Z",
                            "9999-12-31T23:59:59.999999999-23:59"}) {
      CAPTURE(bad);
      Result<system_clock::time_point> r = ParseIso8601(bad);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
    // The years inside the range still parse.
    CHECK(*ParseIso8601("2200-01-01T00:00:00Z") == Utc(2200, 1, 1));
    CHECK(*ParseHttpDate("Wed, 01 Jan 1800 00:00:00 GMT") == Utc(1800, 1, 1));
  }
}

}  // namespace
}  // namespace reelfs::s3

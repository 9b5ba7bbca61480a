// common/time_format: every format, times before 1970, and HTTP dates under a C++ global locale
// that would spell names its own way.
#include "common/time_format.h"

#include <clocale>
#include <ctime>
#include <locale>
#include <string>

#include <doctest/doctest.h>

#include "tests/fakes/utc_time.h"

namespace reelfs {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

using testing::Utc;

// A time_put facet that writes "localized" for anything: a locale that uses it cannot go unseen.
class MarkedTimePut : public std::time_put<char> {
 protected:
  iter_type do_put(iter_type out, std::ios_base&, char, const std::tm*, char, char) const override {
    for (char c : std::string("localized")) *out++ = c;
    return out;
  }
};

TEST_SUITE("common") {
  TEST_CASE("time format: every form") {
    const auto t = Utc(2009, 10, 12, 17, 50, 30) + 123456us;
    CHECK(FormatIso8601(t) == "2009-10-12T17:50:30.123Z");
    CHECK(FormatIso8601Seconds(t) == "2009-10-12T17:50:30Z");
    CHECK(FormatIso8601Basic(t) == "20091012T175030Z");
    CHECK(FormatDateTime(t) == "2009-10-12 17:50:30");
    CHECK(FormatHttpDate(t) == "Mon, 12 Oct 2009 17:50:30 GMT");
    CHECK(FormatHttpDate(Utc(1994, 11, 6, 8, 49, 37)) == "Sun, 06 Nov 1994 08:49:37 GMT");
    CHECK(FormatIso8601Basic(Utc(2015, 8, 30, 12, 36, 0)) == "20150830T123600Z");
  }

  TEST_CASE("time format: the epoch and before") {
    CHECK(FormatIso8601(Utc(1970, 1, 1)) == "1970-01-01T00:00:00.000Z");
    CHECK(FormatIso8601(Utc(1970, 1, 1) - 500ms) == "1969-12-31T23:59:59.500Z");
    CHECK(FormatIso8601Seconds(Utc(1970, 1, 1) - 1ns) == "1969-12-31T23:59:59Z");
    CHECK(FormatHttpDate(Utc(1969, 12, 31, 23, 59, 59)) == "Wed, 31 Dec 1969 23:59:59 GMT");
    CHECK(FormatDateTime(Utc(2262, 1, 1)) == "2262-01-01 00:00:00");
  }

  TEST_CASE("time format: English names whatever the locale") {
    const std::locale before = std::locale::global(
        std::locale(std::locale::classic(), new MarkedTimePut));  // the locale owns the facet
    const std::string http = FormatHttpDate(Utc(2050, 12, 2));
    const std::string iso = FormatIso8601(Utc(2050, 12, 2));
    std::locale::global(before);
    CHECK(http == "Fri, 02 Dec 2050 00:00:00 GMT");
    CHECK(iso == "2050-12-02T00:00:00.000Z");

    // The C locale too, where one that names days otherwise is installed.
    const std::string c_before = std::setlocale(LC_TIME, nullptr);
    bool set = false;
    for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
      if (std::setlocale(LC_TIME, name) != nullptr) {
        set = true;
        break;
      }
    }
    if (!set) MESSAGE("no German or French locale installed: the C-locale half is not exercised");
    const std::string c_http = FormatHttpDate(Utc(2050, 12, 2));
    std::setlocale(LC_TIME, c_before.c_str());
    CHECK(c_http == "Fri, 02 Dec 2050 00:00:00 GMT");
  }
}

}  // namespace
}  // namespace reelfs

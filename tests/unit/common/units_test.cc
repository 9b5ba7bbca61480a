#include "common/units.h"

#include <doctest/doctest.h>

namespace reelfs {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_SUITE("common") {
  TEST_CASE("byte sizes with units") {
    CHECK(*ParseByteSize("512") == 512);
    CHECK(*ParseByteSize("16MiB") == 16 * kMiB);
    CHECK(*ParseByteSize("8 KiB") == 8 * kKiB);
    CHECK(*ParseByteSize("1GB") == 1000000000ULL);
    CHECK(*ParseByteSize("1.5GiB") == 3 * kGiB / 2);
    CHECK(*ParseByteSize("2gib") == 2 * kGiB);
    CHECK_FALSE(ParseByteSize("").ok());
    CHECK_FALSE(ParseByteSize("MiB").ok());
    CHECK_FALSE(ParseByteSize("12 parsecs").ok());
    CHECK_FALSE(ParseByteSize("1.2.3MiB").ok());
    CHECK_FALSE(ParseByteSize("0.5B").ok());
    CHECK(ParseByteSize("99999999TiB").status().code() == StatusCode::kOutOfRange);
  }

  TEST_CASE("durations with units") {
    CHECK(*ParseDuration("30s") == seconds(30));
    CHECK(*ParseDuration("250ms") == milliseconds(250));
    CHECK(*ParseDuration("2m") == seconds(120));
    CHECK(*ParseDuration("1h") == seconds(3600));
    CHECK(*ParseDuration("10") == seconds(10));
    CHECK(*ParseDuration("1.5s") == milliseconds(1500));
    CHECK_FALSE(ParseDuration("10 fortnights").ok());
    CHECK_FALSE(ParseDuration("-3s").ok());
  }

  TEST_CASE("formatting sizes") {
    CHECK(FormatByteSize(512) == "512 B");
    CHECK(FormatByteSize(8 * kMiB) == "8.0 MiB");
    CHECK(FormatByteSize(3 * kGiB / 2) == "1.5 GiB");
  }
}

TEST_CASE("AlignDown and AlignUp round to multiples") {
  static_assert(AlignUp(0, 4096) == 0);
  CHECK(AlignDown(1 * kMiB + 128 * kKiB, kMiB) == kMiB);
  CHECK(AlignUp(1 * kMiB + 128 * kKiB, kMiB) == 2 * kMiB);
  CHECK(AlignUp(2 * kMiB, kMiB) == 2 * kMiB);
  CHECK(AlignDown(2 * kMiB, kMiB) == 2 * kMiB);
  CHECK(AlignUp(1, 8 * kMiB) == 8 * kMiB);
  CHECK(AlignUp(4097, 4096) == 8192);
  CHECK(AlignDown(4095, 4096) == 0);
}

}  // namespace
}  // namespace reelfs

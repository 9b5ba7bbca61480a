#include "common/log.h"

#include <doctest/doctest.h>

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("per-subject levels") {
    REQUIRE(ConfigureLogging("warn,s3=debug").ok());
    CHECK(LogEnabled(LogLevel::kDebug, "s3"));
    CHECK_FALSE(LogEnabled(LogLevel::kTrace, "s3"));
    CHECK_FALSE(LogEnabled(LogLevel::kInfo, "gateway"));
    CHECK(LogEnabled(LogLevel::kError, "gateway"));
    REQUIRE(ConfigureLogging("info").ok());
    CHECK_FALSE(LogEnabled(LogLevel::kDebug, "s3"));
  }

  TEST_CASE("bad specs are rejected and leave the config alone") {
    REQUIRE(ConfigureLogging("info").ok());
    CHECK_FALSE(ConfigureLogging("loud").ok());
    CHECK_FALSE(ConfigureLogging("info,s3=chatty").ok());
    CHECK(LogEnabled(LogLevel::kInfo, "s3"));
  }
}

}  // namespace
}  // namespace reelfs

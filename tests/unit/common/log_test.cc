#include "common/log.h"

#include <signal.h>

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

  TEST_CASE("SIGUSR2 toggles debug logging for every subject, and back") {
    REQUIRE(ConfigureLogging("warn,s3=error").ok());
    REQUIRE(InstallDebugToggle(SIGUSR2).ok());
    const bool before = DebugToggledOn();
    if (before) ::raise(SIGUSR2);  // start from off
    CHECK_FALSE(LogEnabled(LogLevel::kDebug, "fuse"));
    ::raise(SIGUSR2);
    CHECK(DebugToggledOn());
    CHECK(LogEnabled(LogLevel::kDebug, "fuse"));
    CHECK(LogEnabled(LogLevel::kDebug, "s3"));  // even a subject set above it
    CHECK_FALSE(LogEnabled(LogLevel::kTrace, "fuse"));
    ::raise(SIGUSR2);
    CHECK_FALSE(DebugToggledOn());
    CHECK_FALSE(LogEnabled(LogLevel::kDebug, "fuse"));
    CHECK(LogEnabled(LogLevel::kWarn, "fuse"));
    REQUIRE(ConfigureLogging("info").ok());
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

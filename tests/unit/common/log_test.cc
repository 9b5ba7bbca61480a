#include "common/log.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

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

  TEST_CASE("JSON lines: one valid object per line, whatever the message holds") {
    REQUIRE(ConfigureLogging("info").ok());
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("reelfs-log-json-" + std::to_string(::getpid()));
    REQUIRE(LogToFile(path.string()).ok());
    CHECK_FALSE(ParseLogFormat("yaml").ok());
    auto json = ParseLogFormat("json");
    REQUIRE(json.ok());
    SetLogFormat(*json);
    REELFS_LOG_WARN("s3", "key \"{}\" said {}", "a\nb", std::string("\xff\x01"));
    REELFS_LOG_DEBUG("s3", "not at this level");
    SetLogFormat(LogFormat::kText);
    REELFS_LOG_INFO("fuse", "back to text");
    LogToStderr();

    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::filesystem::remove(path);
    REQUIRE(lines.size() == 2);
    auto doc = nlohmann::json::parse(lines[0]);  // throws (fails the test) if not one object
    CHECK(doc["level"] == "warning");
    CHECK(doc["subject"] == "s3");
    CHECK(doc["msg"] == "key \"a\nb\" said \xEF\xBF\xBD\x01");
    CHECK(doc["time"].get<std::string>().size() ==
          std::string("2026-12-05T10:00:00.123456Z").size());
    CHECK(lines[1].find(" info [fuse] back to text") != std::string::npos);
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

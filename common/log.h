// Logging facade (docs/conventions.md "Logging and secrets"). Call sites use the REELFS_LOG_*
// macros with a subject ("s3", "gateway", "fuse", ...) and fmt syntax; the backend (spdlog) stays
// behind log.cc.
//
// Levels are set per subject from a spec such as "info,s3=debug,curl=trace" (REELFS_LOG).
// Never pass secrets (secret keys, Authorization values, signatures, presigned queries).
//
// Thread-safety: all functions are safe to call from any thread. ConfigureLogging and
// LogToFile/LogToSyslog are meant for start-up, before worker threads exist.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/result.h"
#include "common/status.h"

namespace reelfs {

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// Parses "LEVEL[,SUBJECT=LEVEL]...", e.g. "warn,s3=debug". Unknown level names are an error.
Status ConfigureLogging(std::string_view spec);

// How a line looks. Text: "2026-12-05T10:00:00.123456Z info [s3] message". JSON lines, for a log
// shipper: {"time":"…","level":"info","subject":"s3","msg":"message"} (syslog lines leave out
// "time", which syslog adds). Applies to the sink in use and to any chosen later.
enum class LogFormat { kText, kJson };
// "text" or "json"; anything else is an error naming both.
Result<LogFormat> ParseLogFormat(std::string_view name);
void SetLogFormat(LogFormat format);

// Where log lines go. stderr is the default.
Status LogToFile(const std::string& path);
void LogToSyslog(std::string_view ident);
void LogToStderr();

// Run-time level change without a restart: signal `signo` (the daemons use SIGUSR2) toggles debug
// logging for every subject on and off, and the next log call says which ("debug logging on").
// The handler only increments an atomic counter. Call once at start-up.
Status InstallDebugToggle(int signo);
// Whether the toggle is on now (an odd number of signals so far).
bool DebugToggledOn();

bool LogEnabled(LogLevel level, std::string_view subject);
void LogWrite(LogLevel level, std::string_view subject, std::string_view message);

}  // namespace reelfs

#define REELFS_LOG(level, subject, ...)                                   \
  do {                                                                    \
    if (::reelfs::LogEnabled((level), (subject)))                         \
      ::reelfs::LogWrite((level), (subject), ::fmt::format(__VA_ARGS__)); \
  } while (0)

#define REELFS_LOG_TRACE(subject, ...) REELFS_LOG(::reelfs::LogLevel::kTrace, subject, __VA_ARGS__)
#define REELFS_LOG_DEBUG(subject, ...) REELFS_LOG(::reelfs::LogLevel::kDebug, subject, __VA_ARGS__)
#define REELFS_LOG_INFO(subject, ...) REELFS_LOG(::reelfs::LogLevel::kInfo, subject, __VA_ARGS__)
#define REELFS_LOG_WARN(subject, ...) REELFS_LOG(::reelfs::LogLevel::kWarn, subject, __VA_ARGS__)
#define REELFS_LOG_ERROR(subject, ...) REELFS_LOG(::reelfs::LogLevel::kError, subject, __VA_ARGS__)

#include "common/log.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/result.h"

namespace reelfs {
namespace {

struct LogState {
  std::shared_mutex mutex;
  LogLevel default_level = LogLevel::kInfo;
  std::map<std::string, LogLevel, std::less<>> subject_levels;  // GUARDED_BY(mutex)
  std::shared_ptr<spdlog::logger> logger;                       // GUARDED_BY(mutex)
  LogFormat format = LogFormat::kText;                          // GUARDED_BY(mutex)
  bool sink_has_time = true;                                    // GUARDED_BY(mutex)
};

// The pattern around "%v": LogWrite writes "[subject] message" for text and the rest of the
// object ("subject":…,"msg":…) for JSON, so the message's escaping is done once, in LogWrite.
std::string Pattern(LogFormat format, bool with_time) {
  if (format == LogFormat::kJson) {
    return with_time ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})"
                     : R"({"level":"%l",%v})";
  }
  return with_time ? "%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v" : "%l %v";
}

// The debug toggle: the signal handler only counts (a lock-free atomic is async-signal-safe);
// an odd count means "debug on". The first LogEnabled to see a new count says so in the log.
std::atomic<unsigned> g_toggles{0};
std::atomic<unsigned> g_toggles_seen{0};
static_assert(std::atomic<unsigned>::is_always_lock_free);

extern "C" void OnDebugToggleSignal(int) { g_toggles.fetch_add(1, std::memory_order_relaxed); }

LogState& State() {
  static LogState* state = [] {
    auto* s = new LogState();  // leaked on purpose: logging must outlive static destructors
    s->logger = std::make_shared<spdlog::logger>("reelfs",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
    s->logger->set_pattern(Pattern(LogFormat::kText, true), spdlog::pattern_time_type::utc);
    s->logger->set_level(spdlog::level::trace);
    return s;
  }();
  return *state;
}

Result<LogLevel> ParseLevel(std::string_view name) {
  if (name == "trace") return LogLevel::kTrace;
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn" || name == "warning") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  if (name == "off") return LogLevel::kOff;
  return Status::InvalidArgument("unknown log level '" + std::string(name) +
                                 "' (trace, debug, info, warn, error, off)");
}

spdlog::level::level_enum ToSpd(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

void ReplaceSink(spdlog::sink_ptr sink, bool with_time) {
  LogState& s = State();
  auto logger = std::make_shared<spdlog::logger>("reelfs", std::move(sink));
  logger->set_level(spdlog::level::trace);
  // Every line reaches the file (or stderr) as it is written: a daemon's log is read while it
  // runs, with tail -f, and after a crash, not only after a clean exit flushed the buffer. Lines
  // are written only at the levels enabled, so the cost is one write(2) per line logged.
  logger->flush_on(spdlog::level::trace);
  std::unique_lock lock(s.mutex);
  logger->set_pattern(Pattern(s.format, with_time), spdlog::pattern_time_type::utc);
  s.sink_has_time = with_time;
  s.logger = std::move(logger);
}

}  // namespace

Status ConfigureLogging(std::string_view spec) {
  LogLevel default_level = LogLevel::kInfo;
  std::map<std::string, LogLevel, std::less<>> subjects;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      auto level = ParseLevel(item);
      if (!level.ok()) return level.status();
      default_level = *level;
    } else {
      auto level = ParseLevel(item.substr(eq + 1));
      if (!level.ok()) return level.status();
      subjects[std::string(item.substr(0, eq))] = *level;
    }
  }
  LogState& s = State();
  std::unique_lock lock(s.mutex);
  s.default_level = default_level;
  s.subject_levels = std::move(subjects);
  return Status::Ok();
}

Result<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return Status::InvalidArgument("unknown log format '" + std::string(name) + "' (text, json)");
}

void SetLogFormat(LogFormat format) {
  LogState& s = State();
  std::unique_lock lock(s.mutex);
  s.format = format;
  s.logger->set_pattern(Pattern(format, s.sink_has_time), spdlog::pattern_time_type::utc);
}

Status LogToFile(const std::string& path) {
  try {
    ReplaceSink(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path), true);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("cannot open log file " + path + ": " + e.what());
  }
  return Status::Ok();
}

void LogToSyslog(std::string_view ident) {
  ReplaceSink(
      std::make_shared<spdlog::sinks::syslog_sink_mt>(std::string(ident), 0, LOG_USER, true),
      false);
}

Status InstallDebugToggle(int signo) {
  struct sigaction action {};
  action.sa_handler = OnDebugToggleSignal;
  ::sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(signo, &action, nullptr) != 0) return ErrnoToStatus(errno, "sigaction");
  return Status::Ok();
}

bool DebugToggledOn() { return g_toggles.load(std::memory_order_relaxed) % 2 == 1; }

void LogToStderr() { ReplaceSink(std::make_shared<spdlog::sinks::stderr_sink_mt>(), true); }

bool LogEnabled(LogLevel level, std::string_view subject) {
  const unsigned toggles = g_toggles.load(std::memory_order_relaxed);
  if (unsigned seen = g_toggles_seen.load(std::memory_order_relaxed);
      seen != toggles &&
      g_toggles_seen.compare_exchange_strong(seen, toggles, std::memory_order_relaxed)) {
    LogWrite(LogLevel::kWarn, "log",
             (toggles % 2 == 1) ? "debug logging on (SIGUSR2; send it again to turn it off)"
                                : "debug logging off (SIGUSR2): the configured levels again");
  }
  if ((toggles % 2 == 1) && level >= LogLevel::kDebug && level != LogLevel::kOff) return true;
  LogState& s = State();
  std::shared_lock lock(s.mutex);
  auto it = s.subject_levels.find(subject);
  LogLevel threshold = it != s.subject_levels.end() ? it->second : s.default_level;
  return level != LogLevel::kOff && level >= threshold;
}

void LogWrite(LogLevel level, std::string_view subject, std::string_view message) {
  std::shared_ptr<spdlog::logger> logger;
  LogFormat format;
  {
    LogState& s = State();
    std::shared_lock lock(s.mutex);
    logger = s.logger;
    format = s.format;
  }
  if (format == LogFormat::kJson) {
    // DumpJson escapes quotes, control characters and bytes that are not UTF-8 (a key may hold
    // any), so every line stays one valid JSON object.
    logger->log(ToSpd(level), R"("subject":{},"msg":{})", DumpJson(Json(std::string(subject))),
                DumpJson(Json(std::string(message))));
    return;
  }
  logger->log(ToSpd(level), "[{}] {}", subject, message);
}

}  // namespace reelfs

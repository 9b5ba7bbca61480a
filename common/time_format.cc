#include "common/time_format.h"

#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace reelfs {
namespace {

using std::chrono::system_clock;

// The UTC fields of `t`, and its milliseconds. Floor, not truncation, so a time before 1970 keeps
// its second (-0.5 s is 23:59:59.500). Not fmt's time_point formatter: fmt 9 renders it in local
// time.
std::tm UtcFields(system_clock::time_point t, int* millis = nullptr) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  if (millis != nullptr) {
    *millis =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t - secs).count());
  }
  const std::time_t tt = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

}  // namespace

std::string FormatIso8601(system_clock::time_point t) {
  int millis = 0;
  const std::tm tm = UtcFields(t, &millis);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", tm, millis);
}

std::string FormatIso8601Seconds(system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", UtcFields(t));
}

std::string FormatIso8601Basic(system_clock::time_point t) {
  return fmt::format("{:%Y%m%dT%H%M%SZ}", UtcFields(t));
}

std::string FormatDateTime(system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%d %H:%M:%S}", UtcFields(t));
}

std::string FormatHttpDate(system_clock::time_point t) {
  return fmt::format("{:%a, %d %b %Y %H:%M:%S GMT}", UtcFields(t));
}

}  // namespace reelfs

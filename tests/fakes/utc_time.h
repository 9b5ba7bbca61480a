// Test helper: a UTC wall-clock time from its calendar fields, so tests state dates as dates.
// Pure function; thread-safe.
#pragma once

#include <chrono>

namespace reelfs::testing {

inline std::chrono::system_clock::time_point Utc(int y, unsigned m, unsigned d, int hh = 0,
                                                 int mm = 0, int ss = 0) {
  return std::chrono::sys_days{std::chrono::year{y} / m / d} + std::chrono::hours(hh) +
         std::chrono::minutes(mm) + std::chrono::seconds(ss);
}

}  // namespace reelfs::testing

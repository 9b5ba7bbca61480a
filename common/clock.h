// Clock: the source of time for code whose behaviour depends on it (retry backoff, TTLs, the
// tape simulator), so tests can drive time by hand.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <chrono>
#include <memory>

namespace reelfs {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

  virtual ~Clock() = default;
  // Monotonic time.
  virtual TimePoint Now() const = 0;
  // Wall-clock time (for Last-Modified, expiry dates).
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
  // Blocks the calling thread for `d` of this clock's time.
  virtual void SleepFor(Duration d) = 0;
};

// The real clocks. Returns a process-wide instance.
Clock& RealClock();

}  // namespace reelfs

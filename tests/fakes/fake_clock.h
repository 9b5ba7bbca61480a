// FakeClock: a Clock that moves only when a test says so, for TTL and timeout tests.
//
// Thread-safety: all methods are safe from any thread (atomics). SleepFor advances the clock
// instead of blocking, so code that sleeps in a test finishes at once.
#pragma once

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace reelfs::testing {

class FakeClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  std::chrono::system_clock::time_point WallNow() const override {
    return wall_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            Duration(now_ns_.load()));
  }
  void SleepFor(Duration d) override { Advance(d); }
  void Advance(Duration d) { now_ns_.fetch_add(d.count()); }

 private:
  // A fixed, plausible wall time (2024-01-01T00:00:00Z) so tests are reproducible.
  const std::chrono::system_clock::time_point wall_base_ =
      std::chrono::system_clock::time_point(std::chrono::seconds(1704067200));
  std::atomic<Duration::rep> now_ns_{1'000'000'000};
};

}  // namespace reelfs::testing

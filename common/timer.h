// Timer: runs callbacks after a delay measured on a Clock, for polls and backoffs in code that
// must not sleep on a caller's thread (the restore poller, rate limiters).
//
// Implementations: CreateRealTimer (one thread, steady clock) and tests/fakes/fake_timer.h
// (fires due callbacks when a test advances a FakeClock).
//
// Thread-safety: all methods may be called from any thread, including from inside a callback.
// Callbacks run on the timer's thread one at a time, in deadline order; they must not block for
// long (hand real work to the ObjectStore or another thread). Cancel() of a callback that is
// running does not wait for it. The destructor drops callbacks that have not run (without
// running them) and joins the thread; it must not be called from a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/clock.h"

namespace reelfs {

class Timer {
 public:
  using Id = uint64_t;  // never 0
  virtual ~Timer() = default;
  // Runs `fn` once, `delay` (>= 0) from now on the timer's clock.
  virtual Id After(Clock::Duration delay, std::function<void()> fn) = 0;
  // True when `id` was pending and will now never run.
  virtual bool Cancel(Id id) = 0;
  virtual Clock& clock() = 0;
};

// A timer thread on `clock` (RealClock() in production). `name` names the thread (15 chars max).
std::unique_ptr<Timer> CreateRealTimer(Clock& clock, const char* name = "reelfs-timer");

}  // namespace reelfs

// FakeTimer: a Timer over a FakeClock that fires nothing by itself; a test moves time with
// Advance(d), which runs every callback that falls due, in deadline order, on the test's thread.
//
//   testing::FakeClock clock;
//   testing::FakeTimer timer(clock);
//   timer.After(5s, [&] { ++fired; });
//   timer.Advance(5s);  // fired == 1, clock moved by 5 s
//
// Callbacks may schedule or cancel others; one scheduled inside Advance that is due before the
// end of the advance runs in the same call. While a callback runs, the clock reads its deadline.
//
// Thread-safety: After, Cancel and pending may be called from any thread, also from inside a
// callback. Advance calls are serialized; a callback must not call Advance.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "common/timer.h"
#include "tests/fakes/fake_clock.h"

namespace reelfs::testing {

class FakeTimer final : public Timer {
 public:
  explicit FakeTimer(FakeClock& clock) : clock_(clock) {}

  Id After(Clock::Duration delay, std::function<void()> fn) override {
    const Clock::TimePoint now = clock_.Now();
    delay = std::max(delay, Clock::Duration::zero());
    // Saturates: Duration::max() means "never" and must not overflow.
    const Clock::TimePoint deadline =
        delay > Clock::TimePoint::max() - now ? Clock::TimePoint::max() : now + delay;
    std::lock_guard lock(mutex_);
    const Id id = next_id_++;
    queue_.emplace(std::make_pair(deadline, id), std::move(fn));
    deadlines_.emplace(id, deadline);
    return id;
  }

  bool Cancel(Id id) override {
    std::function<void()> dropped;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    auto d = deadlines_.find(id);
    if (d == deadlines_.end()) return false;
    auto q = queue_.find(std::make_pair(d->second, id));
    dropped = std::move(q->second);
    queue_.erase(q);
    deadlines_.erase(d);
    return true;
  }

  Clock& clock() override { return clock_; }

  // Moves the clock forward by `d`, running each callback due by then at its own deadline.
  void Advance(Clock::Duration d) {
    std::lock_guard advancing(advance_mutex_);
    const Clock::TimePoint target = clock_.Now() + std::max(d, Clock::Duration::zero());
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard lock(mutex_);
        if (queue_.empty() || queue_.begin()->first.first > target) break;
        auto it = queue_.begin();
        const Clock::TimePoint deadline = it->first.first;
        fn = std::move(it->second);
        deadlines_.erase(it->first.second);
        queue_.erase(it);
        if (deadline > clock_.Now()) clock_.Advance(deadline - clock_.Now());
      }
      fn();
    }
    if (target > clock_.Now()) clock_.Advance(target - clock_.Now());
  }
  // Runs what is due now without moving the clock.
  void RunDue() { Advance(Clock::Duration::zero()); }

  size_t pending() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }
  // Time until the earliest pending callback, if any.
  std::optional<Clock::Duration> NextIn() const {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return std::nullopt;
    return std::max(queue_.begin()->first.first - clock_.Now(), Clock::Duration::zero());
  }

 private:
  FakeClock& clock_;
  std::mutex advance_mutex_;  // serializes Advance; taken before mutex_
  mutable std::mutex mutex_;  // never held while a callback runs
  Id next_id_ = 1;
  std::map<std::pair<Clock::TimePoint, Id>, std::function<void()>> queue_;
  std::unordered_map<Id, Clock::TimePoint> deadlines_;
};

}  // namespace reelfs::testing

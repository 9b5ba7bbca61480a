#include "common/timer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_timer.h"

namespace reelfs {
namespace {

using namespace std::chrono_literals;

// Records the order callbacks ran in; wait_for(n) blocks until n have run (no time limit: ctest's
// timeout is the limit, so nothing here depends on how fast the machine is).
class Recorder {
 public:
  void Add(int v) {
    // Notified under the lock: a WaitFor that returns may destroy the recorder at once.
    std::lock_guard lock(mutex_);
    order_.push_back(v);
    cv_.notify_all();
  }
  std::vector<int> WaitFor(size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return order_.size() >= n; });
    return order_;
  }
  std::vector<int> Snapshot() {
    std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<int> order_;
};

TEST_SUITE("common") {
  TEST_CASE("real timer runs callbacks in deadline order, ties in scheduling order") {
    auto timer = CreateRealTimer(RealClock(), "timer-test");
    Recorder rec;
    timer->After(30ms, [&] { rec.Add(3); });
    timer->After(10ms, [&] { rec.Add(1); });
    timer->After(20ms, [&] { rec.Add(2); });
    timer->After(30ms, [&] { rec.Add(4); });  // same deadline as 3 at best: never before it
    timer->After(-5ms, [&] { rec.Add(0); });  // negative delay: at once
    std::vector<int> order = rec.WaitFor(5);
    CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(&timer->clock() == &RealClock());
  }

  TEST_CASE("real timer: Cancel before running, from a callback, and of itself") {
    auto timer = CreateRealTimer(RealClock());
    Recorder rec;
    Timer::Id never = timer->After(1h, [&] { rec.Add(-1); });
    CHECK(never != 0);
    CHECK(timer->Cancel(never));
    CHECK_FALSE(timer->Cancel(never));  // already cancelled

    Timer::Id victim = timer->After(40ms, [&] { rec.Add(-2); });
    std::atomic<bool> cancelled_victim{false};
    std::atomic<bool> cancelled_self{true};
    std::promise<Timer::Id> self_id;
    std::shared_future<Timer::Id> self_future = self_id.get_future().share();
    Timer::Id self = timer->After(1ms, [&] {
      cancelled_victim = timer->Cancel(victim);
      cancelled_self = timer->Cancel(self_future.get());  // running: cannot be cancelled
      rec.Add(1);
    });
    self_id.set_value(self);
    timer->After(80ms, [&] { rec.Add(2); });  // after the victim's deadline
    std::vector<int> order = rec.WaitFor(2);
    CHECK(order == std::vector<int>{1, 2});
    CHECK(cancelled_victim.load());
    CHECK_FALSE(cancelled_self.load());
  }

  TEST_CASE("real timer: a callback may schedule another") {
    auto timer = CreateRealTimer(RealClock());
    Recorder rec;
    timer->After(0ms, [&] {
      rec.Add(1);
      timer->After(1ms, [&] { rec.Add(2); });
    });
    CHECK(rec.WaitFor(2) == std::vector<int>{1, 2});
  }

  TEST_CASE("real timer destructor drops pending callbacks without running them") {
    auto owned = std::make_shared<int>(7);
    std::atomic<bool> ran{false};
    {
      auto timer = CreateRealTimer(RealClock());
      timer->After(1h, [&ran, owned] { ran = true; });
      timer->After(Clock::Duration::max(), [&ran] { ran = true; });  // "never": no overflow
      CHECK(owned.use_count() == 2);
    }
    CHECK_FALSE(ran.load());
    CHECK(owned.use_count() == 1);  // the dropped callback released what it held
  }

  TEST_CASE("real timer on a fake clock fires once the fake clock reaches the deadline") {
    testing::FakeClock clock;
    auto timer = CreateRealTimer(clock);
    Recorder rec;
    timer->After(10s, [&] { rec.Add(1); });
    timer->After(20s, [&] { rec.Add(2); });
    CHECK(rec.Snapshot().empty());  // fake time has not moved: nothing can be due
    clock.Advance(10s);
    CHECK(rec.WaitFor(1) == std::vector<int>{1});
    CHECK(rec.Snapshot().size() == 1);  // the 20 s one is still 10 s of fake time away
    clock.Advance(10s);
    CHECK(rec.WaitFor(2) == std::vector<int>{1, 2});
  }

  TEST_CASE("fake timer runs due callbacks in order at their deadlines") {
    testing::FakeClock clock;
    testing::FakeTimer timer(clock);
    const Clock::TimePoint start = clock.Now();
    std::vector<std::pair<int, Clock::Duration>> seen;  // (tag, clock offset when run)
    auto note = [&](int tag) { seen.emplace_back(tag, clock.Now() - start); };
    timer.After(3s, [&] { note(3); });
    timer.After(1s, [&] { note(1); });
    Timer::Id two = timer.After(2s, [&] { note(2); });
    timer.After(10s, [&] { note(10); });
    Timer::Id never = timer.After(Clock::Duration::max(), [&] { note(-1); });
    CHECK(timer.pending() == 5);
    CHECK(timer.Cancel(never));
    CHECK(timer.NextIn() == Clock::Duration(1s));
    CHECK(timer.Cancel(two));
    CHECK_FALSE(timer.Cancel(two));
    timer.Advance(500ms);
    CHECK(seen.empty());
    CHECK(clock.Now() - start == Clock::Duration(500ms));
    timer.Advance(4s);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == std::make_pair(1, Clock::Duration(1s)));
    CHECK(seen[1] == std::make_pair(3, Clock::Duration(3s)));
    CHECK(clock.Now() - start == Clock::Duration(4500ms));
    CHECK(timer.pending() == 1);
  }

  TEST_CASE("fake timer runs callbacks scheduled by callbacks when they are due") {
    testing::FakeClock clock;
    testing::FakeTimer timer(clock);
    int chain = 0;
    std::function<void()> step = [&] {
      ++chain;
      timer.After(1s, step);  // a poll loop: reschedules itself forever
    };
    timer.After(1s, step);
    timer.Advance(5s);
    CHECK(chain == 5);
    CHECK(timer.pending() == 1);
    timer.After(0s, [&] { chain = 100; });
    timer.RunDue();
    CHECK(chain == 100);
  }

  TEST_CASE("fake timer accepts After and Cancel from other threads during Advance") {
    testing::FakeClock clock;
    testing::FakeTimer timer(clock);
    std::atomic<int> ran{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          Timer::Id id = timer.After(1ms, [&] { ran.fetch_add(1); });
          if (i % 2 == 0) timer.Cancel(id);  // false if Advance already ran it: both fine
        }
      });
    }
    for (int i = 0; i < 50; ++i) timer.Advance(1ms);
    for (auto& t : threads) t.join();
    timer.Advance(1s);
    CHECK(timer.pending() == 0);
    CHECK(ran.load() >= 400);  // the 400 never cancelled all ran; cancels that lost ran too
    CHECK(ran.load() <= 800);
  }
}

}  // namespace
}  // namespace reelfs

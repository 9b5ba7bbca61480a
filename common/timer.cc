#include "common/timer.h"

#include <pthread.h>

#include <algorithm>
#include <cassert>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs {
namespace {

// How often the thread looks at a clock it cannot wait on (a FakeClock moves without telling
// anyone): short enough for tests, long enough to cost nothing.
constexpr std::chrono::milliseconds kForeignClockPoll{10};
// Longest single wait: far deadlines (a "never" of Duration::max()) are approached in steps, so
// no time arithmetic inside the condition variable can overflow.
constexpr std::chrono::hours kMaxWait{1};

// now + delay, saturating at TimePoint::max() instead of overflowing.
Clock::TimePoint DeadlineAfter(Clock::TimePoint now, Clock::Duration delay) {
  delay = std::max(delay, Clock::Duration::zero());
  if (delay > Clock::TimePoint::max() - now) return Clock::TimePoint::max();
  return now + delay;
}

class RealTimer final : public Timer {
 public:
  RealTimer(Clock& clock, const char* name) : clock_(clock), real_(&clock == &RealClock()) {
    thread_ = std::thread([this] { Run(); });
    // Linux limits thread names to 15 characters plus the NUL.
    std::string short_name = std::string(name != nullptr ? name : "reelfs-timer").substr(0, 15);
    pthread_setname_np(thread_.native_handle(), short_name.c_str());
  }

  ~RealTimer() override {
    assert(std::this_thread::get_id() != thread_.get_id() && "Timer destroyed from a callback");
    std::unordered_map<Id, std::function<void()>> dropped;  // destroyed outside the lock
    {
      MutexLock lock(mutex_);
      stop_ = true;
      dropped.swap(fns_);
    }
    cv_.notify_all();
    thread_.join();
  }

  Id After(Clock::Duration delay, std::function<void()> fn) override {
    const Clock::TimePoint deadline = DeadlineAfter(clock_.Now(), delay);
    Id id;
    bool wake;
    {
      MutexLock lock(mutex_);
      id = next_id_++;
      fns_.emplace(id, std::move(fn));
      heap_.push(Entry{deadline, id});
      // Only an entry that is now the earliest changes what the thread waits for.
      wake = heap_.top().id == id;
    }
    if (wake) cv_.notify_one();
    return id;
  }

  bool Cancel(Id id) override {
    std::function<void()> dropped;  // may own anything: destroyed outside the lock
    MutexLock lock(mutex_);
    auto it = fns_.find(id);
    if (it == fns_.end()) return false;
    dropped = std::move(it->second);
    fns_.erase(it);
    // The heap entry stays and is skipped when it comes up (no O(n) removal).
    return true;
  }

  Clock& clock() override { return clock_; }

 private:
  struct Entry {
    Clock::TimePoint deadline;
    Id id;
    // Min-heap on (deadline, id): equal deadlines run in the order they were scheduled.
    bool operator>(const Entry& other) const {
      return deadline != other.deadline ? deadline > other.deadline : id > other.id;
    }
  };

  void Run() {
    MutexLock lock(mutex_);
    while (!stop_) {
      // Drop entries of cancelled callbacks.
      while (!heap_.empty() && !fns_.contains(heap_.top().id)) heap_.pop();
      if (heap_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const Entry next = heap_.top();
      const Clock::TimePoint now = clock_.Now();
      if (next.deadline > now) {
        if (real_ && next.deadline - now > kMaxWait) {
          cv_.wait_for(lock, kMaxWait);
        } else if (real_) {
          // RealClock's Now() is steady_clock::now(), so its time points are steady_clock's.
          cv_.wait_until(
              lock, std::chrono::time_point_cast<std::chrono::steady_clock::duration>(
                        std::chrono::steady_clock::time_point(next.deadline.time_since_epoch())));
        } else {
          cv_.wait_for(lock, kForeignClockPoll);
        }
        continue;  // woken, timed out or spurious: look again
      }
      heap_.pop();
      auto it = fns_.find(next.id);
      std::function<void()> fn = std::move(it->second);
      fns_.erase(it);  // from here Cancel(id) answers false: the callback is running
      lock.unlock();
      fn();
      fn = nullptr;  // whatever it owns goes before the lock is taken again
      lock.lock();
    }
  }

  Clock& clock_;
  const bool real_;  // clock_ is RealClock(): wait on the condition variable until the deadline

  Mutex mutex_;  // leaf lock: never held while a callback runs
  CondVar cv_;
  bool stop_ GUARDED_BY(mutex_) = false;
  Id next_id_ GUARDED_BY(mutex_) = 1;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_ GUARDED_BY(mutex_);
  std::unordered_map<Id, std::function<void()>> fns_ GUARDED_BY(mutex_);  // pending only

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<Timer> CreateRealTimer(Clock& clock, const char* name) {
  return std::make_unique<RealTimer>(clock, name);
}

}  // namespace reelfs

// CallbackExecutor: one worker thread that runs posted tasks in deadline order (then submission
// order), used by the fakes to call ObjectStore callbacks asynchronously, as the real client's
// event loop does, and to delay them (injected latency).
//
// Why one thread: callbacks of one store then never run concurrently with each other, and tasks
// posted with the same deadline run in submission order, which keeps tests deterministic.
// The destructor runs every task still queued (ignoring their deadlines) before joining, so each
// callback runs exactly once even when the store is destroyed with requests in flight.
//
// Thread-safety: Post/PostAfter/WaitIdle may be called from any thread, including from a task.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "common/thread_annotations.h"

namespace reelfs::s3::fake_internal {

class CallbackExecutor {
 public:
  using Clock = std::chrono::steady_clock;

  CallbackExecutor() : worker_([this] { Run(); }) {}
  ~CallbackExecutor() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  CallbackExecutor(const CallbackExecutor&) = delete;
  CallbackExecutor& operator=(const CallbackExecutor&) = delete;

  void Post(std::function<void()> task) { PostAt(Clock::now(), std::move(task)); }
  void PostAfter(Clock::duration delay, std::function<void()> task) {
    PostAt(Clock::now() + delay, std::move(task));
  }

  // Blocks until no task is queued or running. Never call from a task.
  void WaitIdle() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return tasks_.empty() && !running_; });
  }

 private:
  // Key: (deadline, sequence number) so equal deadlines keep submission order.
  using Key = std::pair<Clock::time_point, uint64_t>;

  void PostAt(Clock::time_point when, std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.emplace(Key{when, next_seq_++}, std::move(task));
    }
    changed_.notify_all();
  }

  void Run() {
    std::unique_lock lock(mutex_);
    while (true) {
      if (tasks_.empty()) {
        if (stopping_) return;
        changed_.wait(lock);
        continue;
      }
      auto first = tasks_.begin();
      if (!stopping_ && first->first.first > Clock::now()) {
        changed_.wait_until(lock, first->first.first);
        continue;
      }
      std::function<void()> task = std::move(first->second);
      tasks_.erase(first);
      running_ = true;
      lock.unlock();
      task();
      task = nullptr;  // destroy captures outside the lock too
      lock.lock();
      running_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;  // leaf lock: never held while a task runs
  std::condition_variable changed_;
  std::map<Key, std::function<void()>> tasks_ GUARDED_BY(mutex_);
  uint64_t next_seq_ GUARDED_BY(mutex_) = 0;
  bool running_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread worker_;  // last member: starts after the state above exists
};

}  // namespace reelfs::s3::fake_internal

// CallbackExecutor: one worker thread that runs posted tasks in deadline order (then submission
// order), used by the fakes to call ObjectStore callbacks asynchronously, as the real client's
// event loop does, and to delay them (injected latency).
//
// Why one thread: callbacks of one store then never run concurrently with each other, and tasks
// posted with the same deadline run in submission order, which keeps tests deterministic.
// The destructor runs every task still queued (ignoring their deadlines) before joining, so each
// callback runs exactly once even when the store is destroyed with requests in flight. A task may
// destroy the executor (its store's last owner letting go in a callback): the destructor then
// runs the queued tasks itself and detaches the worker, which keeps the shared state alive.
//
// Thread-safety: Post/PostAfter/WaitIdle may be called from any thread, including from a task.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::s3::fake_internal {

class CallbackExecutor {
 public:
  using Clock = std::chrono::steady_clock;

  CallbackExecutor() : state_(std::make_shared<State>()) {
    // The worker holds its own reference to the state: if a task destroys the executor (a store
    // whose last owner lets go in a callback), the worker must still find it afterwards.
    worker_ = std::thread([state = state_] { state->Run(); });
  }
  ~CallbackExecutor() {
    {
      MutexLock lock(state_->mutex);
      state_->stopping = true;
    }
    state_->changed.notify_all();
    if (worker_.get_id() != std::this_thread::get_id()) {
      worker_.join();
      return;
    }
    // Destroyed by one of our own tasks: joining would wait for ourselves. Run what is still
    // queued here, while the owner's members are still alive (the tasks may use them), then let
    // the worker finish the current task and exit on its own.
    state_->DrainInline();
    worker_.detach();
  }
  CallbackExecutor(const CallbackExecutor&) = delete;
  CallbackExecutor& operator=(const CallbackExecutor&) = delete;

  void Post(std::function<void()> task) { state_->PostAt(Clock::now(), std::move(task)); }
  void PostAfter(Clock::duration delay, std::function<void()> task) {
    state_->PostAt(Clock::now() + delay, std::move(task));
  }

  // Blocks until no task is queued or running. Never call from a task.
  void WaitIdle() {
    MutexLock lock(state_->mutex);
    state_->changed.wait(lock, [this]() REQUIRES(state_->mutex) {
      return state_->tasks.empty() && !state_->running;
    });
  }

 private:
  // Key: (deadline, sequence number) so equal deadlines keep submission order.
  using Key = std::pair<Clock::time_point, uint64_t>;

  struct State {
    void PostAt(Clock::time_point when, std::function<void()> task) {
      // Notified under the lock: once it is released the worker may run a task that destroys the
      // executor and then drop the last reference to this state (and the condition variable).
      MutexLock lock(mutex);
      tasks.emplace(Key{when, next_seq++}, std::move(task));
      changed.notify_all();
    }

    void Run() {
      MutexLock lock(mutex);
      while (true) {
        if (tasks.empty()) {
          if (stopping) return;
          changed.wait(lock);
          continue;
        }
        auto first = tasks.begin();
        if (!stopping && first->first.first > Clock::now()) {
          changed.wait_until(lock, first->first.first);
          continue;
        }
        std::function<void()> task = std::move(first->second);
        tasks.erase(first);
        running = true;
        lock.unlock();
        task();
        task = nullptr;  // destroy captures outside the lock too
        lock.lock();
        running = false;
        changed.notify_all();
      }
    }

    // Runs every queued task (deadlines ignored) on the calling thread, including tasks they post.
    void DrainInline() {
      while (true) {
        std::function<void()> task;
        {
          MutexLock lock(mutex);
          if (tasks.empty()) return;
          task = std::move(tasks.begin()->second);
          tasks.erase(tasks.begin());
        }
        task();
      }
    }

    Mutex mutex;  // leaf lock: never held while a task runs
    CondVar changed;
    std::map<Key, std::function<void()>> tasks GUARDED_BY(mutex);
    uint64_t next_seq GUARDED_BY(mutex) = 0;
    bool running GUARDED_BY(mutex) = false;
    bool stopping GUARDED_BY(mutex) = false;
  };

  std::shared_ptr<State> state_;
  std::thread worker_;
};

}  // namespace reelfs::s3::fake_internal

// Mutex, RecursiveMutex, MutexLock and CondVar: std::mutex, std::recursive_mutex,
// std::unique_lock and std::condition_variable with clang's capability annotations, so that
// -Wthread-safety checks every GUARDED_BY / REQUIRES against the locks actually held.
// The member names mirror the std types (lock, unlock, wait_for, notify_one, ...) so converting a
// declaration leaves its call sites alone.
// Thread-safety: as the std types they wrap.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "common/thread_annotations.h"

namespace reelfs {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock where it cannot see it (checks nothing at run
  // time).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Re-entrant on one thread. The analysis still sees one capability: a function that takes it
// again while holding it must not say REQUIRES/EXCLUDES for it.
class CAPABILITY("mutex") RecursiveMutex {
 public:
  RecursiveMutex() = default;
  RecursiveMutex(const RecursiveMutex&) = delete;
  RecursiveMutex& operator=(const RecursiveMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::recursive_mutex mu_;
};

// Holds a Mutex for its scope, like std::unique_lock: it may be unlocked and locked again, and a
// CondVar waits on it.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() { lock_.lock(); }
  void unlock() RELEASE() { lock_.unlock(); }
  bool owns_lock() const { return lock_.owns_lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// The scoped guard for RecursiveMutex (no unlock: none of its users need one).
class SCOPED_CAPABILITY RecursiveMutexLock {
 public:
  explicit RecursiveMutexLock(RecursiveMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~RecursiveMutexLock() RELEASE() { mu_.unlock(); }
  RecursiveMutexLock(const RecursiveMutexLock&) = delete;
  RecursiveMutexLock& operator=(const RecursiveMutexLock&) = delete;

 private:
  RecursiveMutex& mu_;
};

// std::condition_variable over a MutexLock. A predicate reads guarded state with the lock held,
// which the analysis cannot see inside a lambda: annotate it, `[&]() REQUIRES(mu_) { ... }`.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  template <class Pred>
  void wait(MutexLock& lock, Pred pred) {
    cv_.wait(lock.lock_, std::move(pred));
  }
  template <class Rep, class Period>
  std::cv_status wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d) {
    return cv_.wait_for(lock.lock_, d);
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return cv_.wait_for(lock.lock_, d, std::move(pred));
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t) {
    return cv_.wait_until(lock.lock_, t);
  }
  template <class Clock, class Duration, class Pred>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t, Pred pred) {
    return cv_.wait_until(lock.lock_, t, std::move(pred));
  }

 private:
  std::condition_variable cv_;
};

}  // namespace reelfs

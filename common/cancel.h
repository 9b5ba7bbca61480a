// CancellationToken: a flag an owner raises to ask an in-flight operation to stop early, with
// optional callbacks so a waiter can be woken at once instead of noticing at its next poll (a
// FUSE INTERRUPT must turn into an EINTR reply promptly, not after the next HEAD).
//
// Thread-safety: every method may be called from any thread. Callbacks run exactly once: on the
// thread that calls Cancel(), or inside OnCancel() when the token is already cancelled. They
// must not block and must not call back into this token.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace reelfs {

class CancellationToken {
 public:
  static std::shared_ptr<CancellationToken> Create() {
    return std::make_shared<CancellationToken>();
  }

  void Cancel() {
    std::unordered_map<uint64_t, std::function<void()>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
      callbacks.swap(callbacks_);
    }
    for (auto& [id, fn] : callbacks) fn();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Runs `fn` once when the token is cancelled (at once, on this thread, if it already is).
  // Returns an id for RemoveOnCancel, 0 when `fn` already ran.
  uint64_t OnCancel(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!cancelled_.load(std::memory_order_acquire)) {
        uint64_t id = next_id_++;
        callbacks_.emplace(id, std::move(fn));
        return id;
      }
    }
    fn();
    return 0;
  }
  // Drops a callback that has not run; harmless for an id that ran or was removed.
  void RemoveOnCancel(uint64_t id) {
    std::function<void()> dropped;  // destroyed outside the lock: it may own anything
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = callbacks_.find(id);
    if (it == callbacks_.end()) return;
    dropped = std::move(it->second);
    callbacks_.erase(it);
  }

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // leaf lock: callbacks never run under it
  std::unordered_map<uint64_t, std::function<void()>> callbacks_;
  uint64_t next_id_ = 1;
};

}  // namespace reelfs

// SlotPool: the bounded set of reusable transport slots of one RDMA channel (RcChannel's RC
// sessions, DcChannel's DC targets) and the FIFO of requests waiting for one.
//
// A request takes an idle slot, or reserves room for a new one (it then gets `make_empty()` and
// sets the slot up itself), or waits. A slot comes back healthy (Release: idle, reused) or is
// dropped after a fence (Drop: its room is free again); either way the channel then calls Next()
// to start the longest-waiting request on the freed slot.
//
// Thread-safety: all methods may be called from any thread (one internal mutex, a leaf: nothing
// is called out while it is held).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::rdmaio::channel {

template <typename Slot, typename Waiter>
class SlotPool {
 public:
  SlotPool(size_t max_slots, std::function<Slot()> make_empty)
      : max_slots_(max_slots), make_empty_(std::move(make_empty)) {}

  // True with `*slot` set (idle, or a new empty one whose room is now reserved); false when all
  // slots are busy and `waiter` was queued for Next().
  bool Acquire(const Waiter& waiter, Slot* slot) {
    MutexLock lock(mutex_);
    if (TakeLocked(slot)) return true;
    waiting_.push_back(waiter);
    return false;
  }

  // The longest-waiting request and a slot for it, when there are both.
  bool Next(Waiter* waiter, Slot* slot) {
    MutexLock lock(mutex_);
    if (waiting_.empty() || !TakeLocked(slot)) return false;
    *waiter = std::move(waiting_.front());
    waiting_.pop_front();
    return true;
  }

  void Release(Slot slot) {
    MutexLock lock(mutex_);
    idle_.push_back(std::move(slot));
  }

  // A slot (or a reserved room) that will not come back.
  void Drop() {
    MutexLock lock(mutex_);
    --live_;
  }

  // Slots alive now: idle, busy or being set up.
  size_t live() const {
    MutexLock lock(mutex_);
    return live_;
  }

 private:
  bool TakeLocked(Slot* slot) REQUIRES(mutex_) {
    if (!idle_.empty()) {
      *slot = std::move(idle_.back());
      idle_.pop_back();
      return true;
    }
    if (live_ < max_slots_) {
      ++live_;
      *slot = make_empty_();
      return true;
    }
    return false;
  }

  const size_t max_slots_;
  const std::function<Slot()> make_empty_;
  mutable Mutex mutex_;
  std::vector<Slot> idle_ GUARDED_BY(mutex_);
  std::deque<Waiter> waiting_ GUARDED_BY(mutex_);
  size_t live_ GUARDED_BY(mutex_) = 0;
};

}  // namespace reelfs::rdmaio::channel

#include "fuse/core/memory_budget.h"

namespace reelfs::fuse {

bool MemoryBudget::TryReserveForPrefetch(uint64_t bytes) {
  // A CAS loop rather than fetch_add-then-undo: a transient overshoot by a refused prefetcher
  // would make a concurrent prefetcher's check fail spuriously and could show up in peak().
  uint64_t now = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || now > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  NotePeak(now + bytes);
  return true;
}

void MemoryBudget::ReserveForDemand(uint64_t bytes) {
  NotePeak(used_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryBudget::Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

void MemoryBudget::NotePeak(uint64_t now) {
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace reelfs::fuse

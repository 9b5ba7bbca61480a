// MemoryBudget: one process-wide limit on the bytes held by read buffers (--max-memory).
//
// Demand reads (a FUSE READ waiting for bytes no prefetch covers) always get their reservation,
// even past the limit, so a reader can never deadlock behind prefetchers; prefetch reservations
// fail when they would cross the limit, and the prefetcher then shrinks its window. That is what
// "demand reads are served first" means here.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace reelfs::fuse {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  // Prefetch: reserves `bytes` if the total stays within the limit.
  [[nodiscard]] bool TryReserveForPrefetch(uint64_t bytes);
  // Demand: always succeeds.
  void ReserveForDemand(uint64_t bytes);
  void Release(uint64_t bytes);

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  void NotePeak(uint64_t now);

  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> peak_{0};
};

}  // namespace reelfs::fuse

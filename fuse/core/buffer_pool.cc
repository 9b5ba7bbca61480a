#include "fuse/core/buffer_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::fuse {
namespace {

// Buffers are page-aligned so that O_DIRECT-style consumers, splice and (later) RDMA
// registration can use them as they are. 4 KiB is the smallest page on every platform we build
// for; a larger alignment would only waste memory on small tail parts.
constexpr size_t kPageSize = 4096;

// Buffers of at least one huge page are aligned to 2 MiB and marked MADV_HUGEPAGE: a fresh 8 MiB
// part then costs 4 page faults instead of 2048. Measured on the mount (bench/RESULTS.md): page
// faults in newly allocated parts were ~30 % of the transport thread, and huge pages took a
// sequential `cat` from 245 to 336 MiB/s. Where transparent huge pages are off, madvise is a
// harmless no-op.
constexpr size_t kHugePageSize = 2 << 20;

// Sizes are rounded up to this granularity to form the size classes of the free list. Part-sized
// buffers (8 MiB by default) dominate; 64 KiB keeps the rounding waste of the small first request
// of a stream (1 MiB + 128 KiB) under 6% while letting tail parts of similar size share a class.
constexpr size_t kSizeClassGranularity = 64 << 10;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, FreeDeleter>;

// One allocation and, in a registered pool, its registration. Members are destroyed in reverse
// order: the region is deregistered before the memory it pins is freed.
struct Block {
  AlignedBytes bytes;
  std::shared_ptr<rdmaio::RegisteredRegion> region;  // null in a plain heap pool
  explicit operator bool() const { return bytes != nullptr; }
};

size_t RoundToClass(size_t size) {
  const size_t rounded = (size + kSizeClassGranularity - 1) / kSizeClassGranularity;
  return (rounded == 0 ? 1 : rounded) * kSizeClassGranularity;
}

// The free list, shared by the pool and every buffer it handed out, so that a buffer may outlive
// the pool object (a READ reply still in flight while the mount shuts down).
//
// Memory the pool holds (in use + idle) stays under `max_bytes` (the mount's --max-memory): an
// idle buffer that would push it over is freed, and an allocation that needs room frees idle
// buffers of other sizes first. Within that cap, idle buffers are kept rather than freed
// because a fresh part costs the kernel a zeroing pass over every page: measured on the mount
// with 4 sequential readers, clear_page was 32 % of the daemon's CPU when the idle cap (then
// 64 MiB) sat below what the readers had in flight. Buffers idle for longer than `idle_ttl` are
// freed at the next allocation or release, so a burst of readers does not pin its peak forever.
class FreeList {
 public:
  FreeList(size_t max_bytes, Clock::Duration idle_ttl, Clock& clock)
      : max_bytes_(max_bytes), idle_ttl_(idle_ttl), clock_(clock) {}

  // An idle buffer of `size_class`, or null (then the caller allocates; Added accounts it).
  Block Take(size_t size_class, std::vector<Block>* to_free) {
    MutexLock lock(mutex_);
    TrimLocked(to_free);
    auto it = idle_.find(size_class);
    if (it != idle_.end() && !it->second.empty()) {
      Block bytes = std::move(it->second.back().bytes);
      it->second.pop_back();
      idle_bytes_ -= size_class;
      in_use_bytes_ += size_class;
      return bytes;
    }
    // Make room for a fresh allocation by freeing idle buffers of other sizes.
    for (auto i = idle_.begin();
         i != idle_.end() && in_use_bytes_ + idle_bytes_ + size_class > max_bytes_;) {
      while (!i->second.empty() && in_use_bytes_ + idle_bytes_ + size_class > max_bytes_) {
        to_free->push_back(std::move(i->second.front().bytes));
        i->second.erase(i->second.begin());
        idle_bytes_ -= i->first;
      }
      i = i->second.empty() ? idle_.erase(i) : std::next(i);
    }
    in_use_bytes_ += size_class;
    ++fresh_allocations_;
    return {};
  }

  BufferPoolStats stats() const {
    MutexLock lock(mutex_);
    return {in_use_bytes_, idle_bytes_, fresh_allocations_};
  }

  // A fresh allocation failed: undo Take's accounting.
  void Failed(size_t size_class) {
    MutexLock lock(mutex_);
    in_use_bytes_ -= size_class;
  }

  // Takes a buffer back; it is freed (by `to_free`'s destruction, after the lock) if keeping it
  // would exceed max_bytes.
  void Return(size_t size_class, Block bytes, std::vector<Block>* to_free) {
    MutexLock lock(mutex_);
    in_use_bytes_ -= size_class;
    TrimLocked(to_free);
    if (in_use_bytes_ + idle_bytes_ + size_class > max_bytes_) {
      to_free->push_back(std::move(bytes));
      return;
    }
    idle_[size_class].push_back({std::move(bytes), clock_.Now()});
    idle_bytes_ += size_class;
  }

 private:
  struct Idle {
    Block bytes;
    Clock::TimePoint since;
  };

  // Frees (into `to_free`) what has been idle longer than idle_ttl. Each class's vector is in
  // return order, so the stale ones are at the front.
  void TrimLocked(std::vector<Block>* to_free) REQUIRES(mutex_) {
    if (idle_bytes_ == 0) return;
    const Clock::TimePoint cutoff = clock_.Now() - idle_ttl_;
    for (auto i = idle_.begin(); i != idle_.end();) {
      auto& list = i->second;
      auto fresh = std::find_if(list.begin(), list.end(),
                                [&](const Idle& idle) { return idle.since >= cutoff; });
      for (auto j = list.begin(); j != fresh; ++j) to_free->push_back(std::move(j->bytes));
      idle_bytes_ -= static_cast<size_t>(fresh - list.begin()) * i->first;
      list.erase(list.begin(), fresh);
      i = list.empty() ? idle_.erase(i) : std::next(i);
    }
  }

  const size_t max_bytes_;
  const Clock::Duration idle_ttl_;
  Clock& clock_;
  mutable Mutex mutex_;  // leaf lock: held only around the map, never across free()
  std::map<size_t, std::vector<Idle>> idle_ GUARDED_BY(mutex_);
  size_t idle_bytes_ GUARDED_BY(mutex_) = 0;
  size_t in_use_bytes_ GUARDED_BY(mutex_) = 0;
  uint64_t fresh_allocations_ GUARDED_BY(mutex_) = 0;
};

class HeapBuffer final : public Buffer {
 public:
  HeapBuffer(std::shared_ptr<FreeList> free_list, size_t size_class, Block bytes, size_t size)
      : free_list_(std::move(free_list)),
        size_class_(size_class),
        bytes_(std::move(bytes)),
        size_(size) {}
  ~HeapBuffer() override {
    std::vector<Block> to_free;  // freed after the free list's lock is released
    free_list_->Return(size_class_, std::move(bytes_), &to_free);
  }

  std::span<std::byte> bytes() override { return {bytes_.bytes.get(), size_}; }
  rdmaio::RegisteredWindow registered_window() override {
    return {.region = bytes_.region, .offset = 0, .length = size_};
  }

 private:
  const std::shared_ptr<FreeList> free_list_;
  const size_t size_class_;
  Block bytes_;
  const size_t size_;  // what the caller asked for; the allocation is size_class_ bytes
};

class HeapBufferPool final : public BufferPool {
 public:
  HeapBufferPool(size_t max_bytes, Clock::Duration idle_ttl, Clock& clock,
                 std::shared_ptr<rdmaio::MemoryRegistrar> registrar)
      : free_list_(std::make_shared<FreeList>(max_bytes, idle_ttl, clock)),
        registrar_(std::move(registrar)) {}

  Result<std::unique_ptr<Buffer>> Allocate(size_t size) override {
    const size_t size_class = RoundToClass(size);
    std::vector<Block> to_free;  // freed after the free list's lock is released
    Block block = free_list_->Take(size_class, &to_free);
    if (!block) {
      // size_class is a multiple of the alignment, as std::aligned_alloc requires.
      const bool huge = size_class % kHugePageSize == 0;
      block.bytes.reset(static_cast<std::byte*>(
          std::aligned_alloc(huge ? kHugePageSize : kPageSize, size_class)));
      if (!block.bytes) {
        free_list_->Failed(size_class);
        return Status::ResourceExhausted("cannot allocate a read buffer of " +
                                         std::to_string(size_class) + " bytes");
      }
      // Advice only: failure (no THP support) leaves ordinary pages, which still work.
      if (huge) (void)::madvise(block.bytes.get(), size_class, MADV_HUGEPAGE);
      if (registrar_ != nullptr) Register(block, size_class);
    }
    return std::unique_ptr<Buffer>(
        std::make_unique<HeapBuffer>(free_list_, size_class, std::move(block), size));
  }

  BufferPoolStats stats() const override {
    BufferPoolStats s = free_list_->stats();
    s.registration_failures = registration_failures_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // Once per fresh allocation: the block keeps its registration while it is recycled.
  void Register(Block& block, size_t size_class) {
    Result<std::shared_ptr<rdmaio::RegisteredRegion>> region = registrar_->Register(
        rdmaio::HostMemory{.bytes = std::span<std::byte>(block.bytes.get(), size_class)});
    if (region.ok()) {
      block.region = std::move(*region);
    } else {
      registration_failures_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const std::shared_ptr<FreeList> free_list_;
  const std::shared_ptr<rdmaio::MemoryRegistrar> registrar_;  // null: plain heap memory
  std::atomic<uint64_t> registration_failures_{0};
};

static_assert(kSizeClassGranularity % kPageSize == 0, "size classes must be whole pages");

}  // namespace

void RetireForever(std::unique_ptr<Buffer> buffer) {
  static auto* mutex = new Mutex;
  static auto* kept = new std::vector<std::unique_ptr<Buffer>>;
  MutexLock lock(*mutex);
  kept->push_back(std::move(buffer));
}

std::shared_ptr<BufferPool> CreateHeapBufferPool(size_t max_bytes, Clock::Duration idle_ttl,
                                                 Clock& clock) {
  return std::make_shared<HeapBufferPool>(max_bytes, idle_ttl, clock, nullptr);
}

std::shared_ptr<BufferPool> CreateRegisteredBufferPool(
    std::shared_ptr<rdmaio::MemoryRegistrar> registrar, size_t max_bytes, Clock::Duration idle_ttl,
    Clock& clock) {
  return std::make_shared<HeapBufferPool>(max_bytes, idle_ttl, clock, std::move(registrar));
}

}  // namespace reelfs::fuse

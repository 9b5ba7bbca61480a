#include "fuse/core/buffer_pool.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>

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

// At most this many bytes sit idle in the free list; anything beyond goes back to the allocator.
// One stream's default maximum window (PrefetchOptions::max_window, 64 MiB), so a sequential
// reader recycles its own parts instead of faulting in new ones, without keeping a whole memory
// budget (default 1 GiB) of idle buffers alive after a burst of readers has gone away.
constexpr size_t kMaxIdleBytes = 64 << 20;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, FreeDeleter>;

size_t RoundToClass(size_t size) {
  const size_t rounded = (size + kSizeClassGranularity - 1) / kSizeClassGranularity;
  return (rounded == 0 ? 1 : rounded) * kSizeClassGranularity;
}

// The free list, shared by the pool and every buffer it handed out, so that a buffer may outlive
// the pool object (a READ reply still in flight while the mount shuts down).
class FreeList {
 public:
  AlignedBytes Take(size_t size_class) {
    std::lock_guard lock(mutex_);
    auto it = idle_.find(size_class);
    if (it == idle_.end() || it->second.empty()) return nullptr;
    AlignedBytes bytes = std::move(it->second.back());
    it->second.pop_back();
    idle_bytes_ -= size_class;
    return bytes;
  }

  void Return(size_t size_class, AlignedBytes bytes) {
    std::lock_guard lock(mutex_);
    if (idle_bytes_ + size_class > kMaxIdleBytes) return;  // `bytes` is freed on return
    idle_[size_class].push_back(std::move(bytes));
    idle_bytes_ += size_class;
  }

 private:
  std::mutex mutex_;  // leaf lock: held only around the map
  std::map<size_t, std::vector<AlignedBytes>> idle_ GUARDED_BY(mutex_);
  size_t idle_bytes_ GUARDED_BY(mutex_) = 0;
};

class HeapBuffer final : public Buffer {
 public:
  HeapBuffer(std::shared_ptr<FreeList> free_list, size_t size_class, AlignedBytes bytes,
             size_t size)
      : free_list_(std::move(free_list)),
        size_class_(size_class),
        bytes_(std::move(bytes)),
        size_(size) {}
  ~HeapBuffer() override { free_list_->Return(size_class_, std::move(bytes_)); }

  std::span<std::byte> bytes() override { return {bytes_.get(), size_}; }

 private:
  const std::shared_ptr<FreeList> free_list_;
  const size_t size_class_;
  AlignedBytes bytes_;
  const size_t size_;  // what the caller asked for; the allocation is size_class_ bytes
};

class HeapBufferPool final : public BufferPool {
 public:
  Result<std::unique_ptr<Buffer>> Allocate(size_t size) override {
    const size_t size_class = RoundToClass(size);
    AlignedBytes bytes = free_list_->Take(size_class);
    if (!bytes) {
      // size_class is a multiple of the alignment, as std::aligned_alloc requires.
      const bool huge = size_class % kHugePageSize == 0;
      bytes.reset(static_cast<std::byte*>(
          std::aligned_alloc(huge ? kHugePageSize : kPageSize, size_class)));
      if (!bytes) {
        return Status::ResourceExhausted("cannot allocate a read buffer of " +
                                         std::to_string(size_class) + " bytes");
      }
      // Advice only: failure (no THP support) leaves ordinary pages, which still work.
      if (huge) (void)::madvise(bytes.get(), size_class, MADV_HUGEPAGE);
    }
    return std::unique_ptr<Buffer>(
        std::make_unique<HeapBuffer>(free_list_, size_class, std::move(bytes), size));
  }

 private:
  const std::shared_ptr<FreeList> free_list_ = std::make_shared<FreeList>();
};

static_assert(kSizeClassGranularity % kPageSize == 0, "size classes must be whole pages");

}  // namespace

std::shared_ptr<BufferPool> CreateHeapBufferPool() { return std::make_shared<HeapBufferPool>(); }

}  // namespace reelfs::fuse

// BufferPool: where read buffers come from. All prefetch and demand-read buffers are allocated
// through this interface so that a later issue can hand out memory registered for RDMA (the
// gateway then writes object bytes straight into it) without touching the read path.
//
// Thread-safety: Allocate may be called from any thread; a Buffer is owned by one holder at a
// time and returns its memory to the pool when destroyed (from any thread).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "common/result.h"

namespace reelfs::fuse {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::span<std::byte> bytes() = 0;
};

class BufferPool {
 public:
  virtual ~BufferPool() = default;
  // A buffer of at least `size` bytes, page-aligned. kResourceExhausted if the pool cannot.
  virtual Result<std::unique_ptr<Buffer>> Allocate(size_t size) = 0;
};

// Page-aligned heap memory, recycled by size class so steady-state reads do not hit malloc.
std::shared_ptr<BufferPool> CreateHeapBufferPool();

}  // namespace reelfs::fuse

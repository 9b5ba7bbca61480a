// BufferPool: where read buffers come from. All prefetch and demand-read buffers are allocated
// through this interface, so that with `reelfs mount --rdma` they can be memory registered for
// RDMA (the gateway then writes object bytes straight into them) without touching the read path.
// The pool sees only rdmaio's registration interface (registered_memory.h), never rdma-core.
//
// Thread-safety: Allocate may be called from any thread; a Buffer is owned by one holder at a
// time and returns its memory to the pool when destroyed (from any thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>

#include "common/clock.h"
#include "common/result.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::fuse {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::span<std::byte> bytes() = 0;
  // Where a DataChannel can fetch into these bytes: a window whose first byte is bytes()[0] and
  // whose length is bytes().size(); region null when the memory is not registered.
  virtual rdmaio::RegisteredWindow registered_window() { return {}; }
};

struct BufferPoolStats {
  uint64_t in_use_bytes = 0;       // handed out and not yet returned
  uint64_t idle_bytes = 0;         // kept for reuse
  uint64_t fresh_allocations = 0;  // allocations the idle list could not serve
  // Registered pools only: fresh allocations the registrar refused (those buffers are plain
  // memory, so their parts are read over HTTP).
  uint64_t registration_failures = 0;
};

class BufferPool {
 public:
  virtual ~BufferPool() = default;
  // A buffer of at least `size` bytes, page-aligned. kResourceExhausted if the pool cannot.
  virtual Result<std::unique_ptr<Buffer>> Allocate(size_t size) = 0;
  virtual BufferPoolStats stats() const = 0;
};

// Keeps `buffer` (and its registration) for the life of the process, never freed nor reused: for a
// buffer whose window a DataChannel refused as quarantined (a fence on it failed, so the server
// may still access it). Kept reachable, so leak checkers do not report it.
void RetireForever(std::unique_ptr<Buffer> buffer);

// Page-aligned heap memory, recycled by size class so steady-state reads do not hit malloc (or
// the kernel's page zeroing). Memory held, in use plus idle, stays under `max_bytes` as long as
// what is in use does (give it the mount's --max-memory); buffers idle for `idle_ttl` are freed
// at the pool's next allocation or release.
std::shared_ptr<BufferPool> CreateHeapBufferPool(
    size_t max_bytes = size_t{1} << 30, Clock::Duration idle_ttl = std::chrono::seconds(30),
    Clock& clock = RealClock());

// The same pool, each fresh allocation registered with `registrar` once (recycled buffers keep
// their registration, so steady-state reads register nothing; an idle buffer is deregistered
// before it is freed). A registration failure (memlock limit) costs only the RDMA path of that
// buffer: it is handed out unregistered and counted in stats().registration_failures.
std::shared_ptr<BufferPool> CreateRegisteredBufferPool(
    std::shared_ptr<rdmaio::MemoryRegistrar> registrar, size_t max_bytes = size_t{1} << 30,
    Clock::Duration idle_ttl = std::chrono::seconds(30), Clock& clock = RealClock());

}  // namespace reelfs::fuse

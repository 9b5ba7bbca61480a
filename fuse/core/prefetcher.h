// Prefetcher: the read path of one open file handle (docs/semantics.md "Reads").
//
// Sequential access grows a window geometrically: the first request is small
// (PrefetchOptions::initial_request), then each time the reader consumes half the window it
// doubles, up to max_window, with several part_size ranged GETs in flight. Forward jumps within
// seek_tolerance wait for data in flight; reads up to seek_tolerance behind the highest byte read
// (kernel readahead arrives out of order) are served from retained data or one demand GET; data
// already read is kept for backward_tolerance; any other jump cancels everything in flight and
// restarts small (random
// access then costs one small GET per read, never a large one). Objects smaller than a part are
// fetched in one GET. Every buffer comes from the BufferPool and is accounted in the
// MemoryBudget (prefetch may be refused and the window shrinks; demand reads always proceed).
// The object's ETag pins the stream: a change mid-read fails reads with ESTALE-class errors.
//
// With a DataChannel (`reelfs mount --rdma`), each part whose buffer is registered
// (Buffer::registered_window) is fetched through the channel into that buffer, so the server
// writes the bytes there over RDMA (or the channel falls back to HTTP by itself); parts in
// unregistered memory, and every part without a channel, are GETs through the ObjectStore. Both
// paths give the same errors (data_channel.h keeps s3's codes and details) and fill the buffer in
// place: no copy either way. A part the channel refuses because its window is quarantined (a
// fence failed on that buffer earlier, so the server might still write into it) is not failed:
// that buffer is retired for good (leaked on purpose: neither the pool nor malloc may hand those
// bytes out again) and the part is fetched over plain HTTP into a fresh buffer.
//
// Read never blocks: it replies through the callback, possibly on the ObjectStore's thread.
// Thread-safety: all methods may be called from any thread; reads on one handle are ordered by
// an internal mutex. Close() cancels requests in flight; callbacks of pending reads still run
// exactly once (with kCancelled if need be). The Prefetcher must outlive none of its requests:
// it keeps its state in a shared block the callbacks hold.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "fuse/core/buffer_pool.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/options.h"
#include "fuse/core/types.h"
#include "rdmaio/data_channel.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

struct ObjectRef {
  std::string bucket;
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

struct PrefetchCounters {
  uint64_t requests = 0;          // ranged GETs issued (either path)
  uint64_t bytes_fetched = 0;     // bytes those GETs returned
  uint64_t bytes_served = 0;      // bytes handed to READ replies
  uint64_t resets = 0;            // random jumps that restarted the stream
  uint64_t prefetch_refused = 0;  // window reservations the MemoryBudget refused
  uint64_t channel_requests = 0;  // of `requests`, fetches sent through the DataChannel
  uint64_t rdma_bytes = 0;        // of `bytes_fetched`, bytes the server wrote over RDMA
  // Parts the DataChannel refused because their window is quarantined (a fence failed on it
  // earlier): each buffer was retired (never reused) and the part fetched over HTTP instead.
  uint64_t quarantined_windows = 0;
  uint64_t open_prefetches = 0;  // whole-object GETs started by Prefetch() before any read
};

class Prefetcher {
 public:
  virtual ~Prefetcher() = default;
  // Reads up to `size` bytes at `offset` (short only at end of object).
  virtual void Read(uint64_t offset, size_t size, Callback<ReadData> done) = 0;
  // Called at open, before any read: an object no larger than a part is fetched whole now, so
  // the first READ (one FUSE round trip later) finds its GET in flight or done. Does nothing for
  // larger objects (their first read decides where the stream starts), for empty ones, or when
  // the MemoryBudget refuses the bytes (the read then fetches them as usual).
  virtual void Prefetch() = 0;
  // Cancels everything in flight and releases buffers. Idempotent.
  virtual void Close() = 0;
  virtual PrefetchCounters counters() const = 0;
};

std::unique_ptr<Prefetcher> CreatePrefetcher(
    std::shared_ptr<s3::ObjectStore> store, ObjectRef object, const PrefetchOptions& options,
    std::shared_ptr<MemoryBudget> budget, std::shared_ptr<BufferPool> pool,
    std::shared_ptr<rdmaio::DataChannel> channel = nullptr);

}  // namespace reelfs::fuse

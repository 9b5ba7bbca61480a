// CachingChannel: the DataChannel decorator that puts the local object cache (`--cache`) in
// front of the RDMA data path, as cache/caching_store.h does for the ObjectStore: a fetch into
// host memory whose range the cache covers is copied from the cache (no request; `via` kCache),
// and what the inner channel fetched into the daemon's own memory (the prefetcher's registered
// buffers, `--rdma`) is stored on the way up, so epoch 2 of an `--rdma` mount reads from the
// cache like any other (docs/cache.md "What fills the cache").
//
// Never stored: a window another process may write (FetchRequest::client_writable: a side-channel
// client's buffer, which could change the bytes between the RDMA write and the hash and so poison
// the cache for every reader); device (GPU) windows, whose bytes are not addressable here (they
// pass straight through, hits included); fetches without If-Match (the cache is keyed by ETag).
// Puts are the inner channel's. Stores and hits run on a small pool of the decorator's own
// (blocking local I/O never runs on a channel's completion thread); `done` runs after the store,
// so the window stays untouched until the caller gets it back (the fencing rule of
// data_channel.h holds unchanged). A failed store is logged by the cache and costs nothing else.
//
// Thread-safety: as any DataChannel.
#pragma once

#include <cstddef>
#include <memory>

#include "cache/object_cache.h"
#include "fuse/core/options.h"
#include "rdmaio/data_channel.h"

namespace reelfs::fuse {

std::shared_ptr<rdmaio::DataChannel> CreateCachingChannel(
    std::shared_ptr<rdmaio::DataChannel> inner, std::shared_ptr<cache::ObjectCache> cache,
    size_t io_threads = 2);

// The prefetch options for a handle that reads through a CachingChannel: its fetches must hold
// whole cache blocks, since the channel's window has no room to widen them. The first request
// (1 MiB + 128 KiB by default) would otherwise end mid-block, its next part begin there, and that
// block never be stored: the object would never be whole in the cache. Rounds initial_request and
// part_size up to multiples of block_size.
PrefetchOptions AlignedToCacheBlocks(PrefetchOptions options, uint64_t block_size);

}  // namespace reelfs::fuse

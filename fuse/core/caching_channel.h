// CachingChannel: the DataChannel decorator that puts the local object cache (`--cache`) in
// front of the RDMA data path, as cache/caching_store.h does for the ObjectStore: a fetch into
// host memory whose range the cache covers is copied from the cache (no request), and what the
// inner channel fetched into host memory is stored on the way up, so that `--rdma` mounts and
// side-channel READs into registered buffers fill the cache for epoch 2 like every other read
// (docs/cache.md "What fills the cache").
//
// Device (GPU) windows pass straight through: their bytes are not addressable here. Fetches
// without If-Match pass through too (the cache is keyed by ETag). Puts are the inner channel's.
// Stores and hits run on a small pool of the decorator's own (blocking local I/O never runs on a
// channel's completion thread); `done` runs after the store, so the window stays untouched
// until the caller gets it back (the fencing rule of data_channel.h holds unchanged). A failed
// store is logged by the cache and costs nothing else.
//
// Thread-safety: as any DataChannel.
#pragma once

#include <cstddef>
#include <memory>

#include "cache/object_cache.h"
#include "rdmaio/data_channel.h"

namespace reelfs::fuse {

std::shared_ptr<rdmaio::DataChannel> CreateCachingChannel(
    std::shared_ptr<rdmaio::DataChannel> inner, std::shared_ptr<cache::ObjectCache> cache,
    size_t io_threads = 2);

}  // namespace reelfs::fuse

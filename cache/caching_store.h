// CachingStore: the ObjectStore decorator that puts an ObjectCache in front of ranged GETs
// (docs/cache.md). Every other call goes to the inner store unchanged.
//
// A GET is cacheable when it names a range and pins a version (If-Match): the cache is keyed by
// the ETag, so a GET without one cannot be answered from it. S3-over-RDMA GETs (extra headers)
// pass through. A cacheable GET whose range the cache covers is answered from local storage on an
// IoPool thread (into the buffer, or to the sink in 1 MiB pieces) and never reaches the server,
// so a cached object reads while its archive copy is offline. Otherwise the GET goes to the
// server for the range widened to whole cache blocks (into a scratch buffer when widening was
// needed, then copied into the caller's; the caller sees exactly its range), and the answer's
// blocks are stored before the caller's callback runs (the caller owns its buffer afterwards).
// An answer is stored only when its ETag is the one pinned. A GET into a sink that the cache does
// not cover (the side channel's READs over HTTP) goes to the server unwidened, its body handed
// on as it comes and copied on the way, and its whole blocks are stored before the callback
// runs; while such copies already hold 64 MiB, further sink GETs pass through unstored.
//
// A cache read that fails (evicted meanwhile, torn, corrupt) falls back to the server; a store
// that fails is the cache's warning, never the read's error.
//
// Thread-safety: as any ObjectStore; callbacks run on the inner store's thread or an IoPool thread.
#pragma once

#include <cstddef>
#include <memory>

#include "cache/object_cache.h"
#include "s3/object_store.h"

namespace reelfs::cache {

std::shared_ptr<s3::ObjectStore> CreateCachingStore(std::shared_ptr<s3::ObjectStore> inner,
                                                    std::shared_ptr<ObjectCache> cache,
                                                    size_t io_threads = 2);

}  // namespace reelfs::cache

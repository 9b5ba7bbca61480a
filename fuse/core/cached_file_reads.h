// Cached-file reads: READs of an object the local cache holds whole, answered with the cache's
// data file itself (ReadData::fd at an offset), so that libfuse splices its pages into /dev/fuse
// (file -> pipe -> kernel, the way libfuse's passthrough_hp serves a file) instead of the daemon
// reading each block into memory and writing it back out (docs/cache.md "Served by the daemon").
// For mounts with --cache where the kernel reads no backing file itself (libfuse < 3.16, a
// kernel without FUSE passthrough, a daemon without CAP_SYS_ADMIN, `--no-passthrough`) and pipes
// hold a whole READ (MountOptions::splice_cached_files).
//
// A decorator over the handle's ordinary Prefetcher. The file comes from ObjectCache::OpenWhole,
// which verified it against the index's block hashes; the daemon never sees these bytes, so each
// READ first checks that the file is still the one verified (inode, size = the object's, mtime
// and ctime unchanged since the open: a write into it, a truncate or a touch changes one of
// them). A file that changed sends this READ and every later one to the inner Prefetcher for good
// (its reads check every block's hash and drop a bad object, then read from the server), with one
// warning. Prefetch does nothing (no GET is needed); Close closes the inner Prefetcher.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/unique_fd.h"
#include "fuse/core/prefetcher.h"
#include "fuse/core/types.h"

namespace reelfs::fuse {

// Mount-wide counters, shared by every decorator (relaxed atomics).
struct CachedFileStats {
  std::atomic<uint64_t> opens{0};      // handles whose READs are answered from the cache's file
  std::atomic<uint64_t> reads{0};      // READs so answered
  std::atomic<uint64_t> bytes{0};      // bytes those READs carried
  std::atomic<uint64_t> fallbacks{0};  // handles whose file changed after the open
};

// Answers `object`'s READs from `file` (the cache's verified data file of exactly this version).
// Returns `inner` itself when `file` cannot be inspected (fstat fails) or is not the object's
// size.
std::shared_ptr<Prefetcher> CreateCachedFilePrefetcher(std::shared_ptr<Prefetcher> inner,
                                                       std::shared_ptr<const UniqueFd> file,
                                                       ObjectRef object,
                                                       std::shared_ptr<CachedFileStats> stats);

}  // namespace reelfs::fuse

// ObjectCache: object bytes kept on local storage (`reelfs mount --cache DIR`) so that reading a
// dataset again costs no request, and above all no tape recall (docs/cache.md).
//
// Block-granular: an object version (bucket, key, ETag) is cached in blocks of
// CacheOptions::block_size (1 MiB) in one sparse data file, DIR/data/<id>, at their own offsets, so
// a 100 GB object read in parts caches exactly the parts read and a fully cached object's file is
// the object itself (what a FUSE passthrough backing file needs). Each block's XXH3-64 hash is in
// the index (cache_index.h): every read verifies the blocks it touches, so a block torn by a crash
// or changed behind the daemon's back is never served: the object is dropped and the read goes to
// the server. One version per key: storing another ETag drops the old one.
//
// Size: at most max_bytes of blocks on disk, and never filling the file system below
// min_free_bytes; room is made by evicting least-recently-used objects whole (the order survives
// restarts). An object larger than max_bytes is not cached. A store that cannot get room, or whose
// write fails (ENOSPC, EROFS, EIO), is skipped with a warning: the cache only ever costs speed.
//
// One process per directory: DIR/lock is held (flock) while the cache is open, and a second mount
// of the same DIR is refused with a message naming the holder.
//
// Thread-safety: every method may be called from any thread. Reads and writes of block bytes run
// outside the internal mutex; the index and the in-memory map are guarded by it. Methods block on
// local I/O: call them from worker threads, never from an event loop (caching_store.h does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cache/cache_files.h"
#include "common/json.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::cache {

struct CacheOptions {
  uint64_t max_bytes = 10ull << 30;  // `--cache-size`
  uint64_t block_size = 1ull << 20;
  // Stores stop (after evicting what they may) when the file system holding DIR would keep less
  // than this free (`--cache-min-free`).
  uint64_t min_free_bytes = 1ull << 30;
};

struct CacheKey {
  std::string bucket;
  std::string key;
  std::string etag;
};

struct CacheStats {
  uint64_t objects = 0;  // object versions with at least one block
  uint64_t bytes = 0;    // bytes of blocks on disk (and reserved by stores in progress)
  uint64_t max_bytes = 0;
  uint64_t complete_objects = 0;
  uint64_t hit_bytes = 0;     // bytes served by Read
  uint64_t hits = 0;          // Read calls answered
  uint64_t stored_bytes = 0;  // bytes written by Store
  uint64_t evicted_objects = 0;
  uint64_t evicted_bytes = 0;
  uint64_t dropped_objects = 0;  // found torn, corrupt or missing when read
  uint64_t store_failures = 0;   // stores whose write or index update failed
  uint64_t stores_skipped = 0;   // stores that found no room (size limit or free-space floor)
  uint64_t whole_opens = 0;      // OpenWhole answers (files handed to the kernel)
  uint64_t verified_bytes = 0;   // bytes OpenWhole read to verify files
};

class ObjectCache {
 public:
  // Opens DIR (created if missing), takes its lock, loads the index and drops what the files no
  // longer back (blocks past a file's end, files the index does not know). Errors: the directory
  // not writable, another process holding it (kFailedPrecondition), an index that is someone
  // else's file.
  [[nodiscard]] static Result<std::shared_ptr<ObjectCache>> Open(
      const std::string& dir, CacheOptions options,
      std::shared_ptr<CacheFiles> files = PosixCacheFiles());
  virtual ~ObjectCache() = default;

  virtual uint64_t block_size() const = 0;
  // The object's size when this version has an entry (any block), else nullopt.
  virtual std::optional<uint64_t> ObjectSize(const CacheKey& key) const = 0;
  // Every block holding a byte of [offset, offset + length) (clamped to the object) is present.
  virtual bool Covers(const CacheKey& key, uint64_t offset, uint64_t length) const = 0;
  // Every block of this version is present.
  virtual bool Complete(const CacheKey& key) const = 0;
  // Bytes of this version on disk (0 when none).
  virtual uint64_t CachedBytes(const CacheKey& key) const = 0;

  // Fills `dst` with the object's bytes at `offset` (the range must be within the object). Each
  // block touched is read whole and its hash checked; any failure drops the object and answers
  // kNotFound (not covered, or evicted meanwhile) or kDataLoss (torn, corrupt): the caller then
  // fetches from the server.
  [[nodiscard]] virtual Status Read(const CacheKey& key, uint64_t offset,
                                    std::span<std::byte> dst) = 0;
  // Stores the whole blocks of `data` (object bytes at `offset`, which must be block-aligned):
  // every full block, and the object's last block when `data` reaches `object_size`. Blocks
  // already present are skipped. A failure is reported for the caller to log; nothing is left
  // that a later Read could serve wrongly.
  [[nodiscard]] virtual Status Store(const CacheKey& key, uint64_t object_size, uint64_t offset,
                                     std::span<const std::byte> data) = 0;

  // A read-only descriptor of the data file of a version held whole, for the kernel to read
  // itself (FUSE passthrough, docs/cache.md "Served by the kernel"): those reads bypass Read's
  // hash checks, so the whole file is verified here first, once per file (the file's inode,
  // size and mtime are remembered in the index, across remounts, and a file changed since is
  // verified again). kNotFound when
  // not whole; kDataLoss when the file fails its hashes (the object is dropped, as by Read).
  [[nodiscard]] virtual Result<UniqueFd> OpenWhole(const CacheKey& key) = 0;
  // OpenWhole for callers that must not block (an OPEN answered on the S3 client's thread): a
  // file verified before is opened inline (an open and an fstat); one that needs verifying is
  // read on the cache's own thread, and `done` runs there.
  virtual void OpenWholeAsync(const CacheKey& key, std::function<void(Result<UniqueFd>)> done) = 0;

  virtual CacheStats stats() const = 0;
  // stats() as JSON (the "cache" member of user.reelfs.metrics).
  virtual Json StatsJson() const = 0;
};

}  // namespace reelfs::cache

// CacheIndex: the object cache's persistent index in SQLite (DIR/index.sqlite, WAL): which object
// versions are cached, which of their blocks are present, each block's hash, and when each object
// was last used (for LRU order across restarts).
//
// The index only ever says what was written: a block row is added after its bytes are in the data
// file (object_cache.cc), so a crash leaves at worst bytes the index does not know (swept at the
// next open) or a row whose bytes are torn (its hash no longer matches: dropped when read). A file
// SQLite cannot open as a database, or another application's, is moved aside and the cache starts
// empty: nothing depends on the cache but speed.
//
// Thread-safety: none; ObjectCache serialises every call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace reelfs::cache {

struct IndexedBlock {
  uint32_t block = 0;
  uint64_t hash = 0;
};

struct IndexedObject {
  int64_t id = 0;  // never reused (AUTOINCREMENT): names the data file
  std::string bucket;
  std::string key;
  std::string etag;
  uint64_t size = 0;
  uint64_t block_size = 0;  // the cache's block size when the object was added
  int64_t last_access_ms = 0;
  // The data file as last verified whole (ObjectCache::OpenWhole); all 0: never.
  uint64_t verified_ino = 0;
  uint64_t verified_size = 0;
  int64_t verified_mtime_ns = 0;
  std::vector<IndexedBlock> blocks;
};

class CacheIndex {
 public:
  virtual ~CacheIndex() = default;
  // Every object with its blocks.
  [[nodiscard]] virtual Result<std::vector<IndexedObject>> LoadAll() = 0;
  // A new object version (no blocks yet); any other version of bucket/key must be removed first.
  [[nodiscard]] virtual Result<int64_t> AddObject(const std::string& bucket, const std::string& key,
                                                  const std::string& etag, uint64_t size,
                                                  uint64_t block_size, int64_t now_ms) = 0;
  // Blocks of object `id`, in one transaction.
  [[nodiscard]] virtual Status AddBlocks(int64_t id, const std::vector<IndexedBlock>& blocks) = 0;
  // The object and its blocks.
  [[nodiscard]] virtual Status RemoveObject(int64_t id) = 0;
  [[nodiscard]] virtual Status RemoveBlock(int64_t id, uint32_t block) = 0;
  [[nodiscard]] virtual Status Touch(int64_t id, int64_t now_ms) = 0;
  // Records that object `id`'s file (this inode, size, mtime) was verified whole.
  [[nodiscard]] virtual Status SetVerified(int64_t id, uint64_t ino, uint64_t size,
                                           int64_t mtime_ns) = 0;
};

// Opens (or creates) the index at `path`.
[[nodiscard]] Result<std::unique_ptr<CacheIndex>> OpenCacheIndex(const std::string& path);
// Opens an existing index to read it while its cache is open elsewhere (the mount's daemon):
// `reelfs stage/status` (cache_contents.h). Only LoadAll may be called; nothing is repaired.
[[nodiscard]] Result<std::unique_ptr<CacheIndex>> OpenCacheIndexReadOnly(const std::string& path);

}  // namespace reelfs::cache

// ReadCacheContents (cache_contents.h).

#include "cache/cache_contents.h"

#include <algorithm>

#include <sys/stat.h>

#include "cache/cache_index.h"

namespace reelfs::cache {

Result<std::unordered_map<std::string, CachedVersion>> ReadCacheContents(
    const std::string& dir, const std::string& bucket) {
  const std::string path = dir + "/index.sqlite";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": no cache index");
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<CacheIndex> index, OpenCacheIndexReadOnly(path));
  REELFS_ASSIGN_OR_RETURN(std::vector<IndexedObject> objects, index->LoadAll());
  std::unordered_map<std::string, CachedVersion> out;
  for (const IndexedObject& o : objects) {
    if (o.bucket != bucket || o.block_size == 0) continue;
    CachedVersion v{o.etag, o.size, 0, false};
    const uint64_t nblocks = (o.size + o.block_size - 1) / o.block_size;
    uint64_t present = 0;
    for (const IndexedBlock& b : o.blocks) {
      if (b.block >= nblocks) continue;
      ++present;
      v.cached_bytes += std::min(o.block_size, o.size - b.block * o.block_size);
    }
    v.whole = nblocks > 0 && present == nblocks;
    out.emplace(o.key, std::move(v));
  }
  return out;
}

}  // namespace reelfs::cache

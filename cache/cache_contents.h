// ReadCacheContents: what a cache directory holds, read from its index without opening the cache
// (no lock, nothing repaired), for `reelfs stage`, `status` and `wait` on paths under a mount
// with --cache (docs/cache.md "Tape"). The daemon's view is the authority: a file torn or changed
// behind it is found when read, not here.
//
// Thread-safety: a pure function over the file system.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/result.h"

namespace reelfs::cache {

struct CachedVersion {
  std::string etag;           // as the cache keys it: without quotes
  uint64_t size = 0;          // the object's
  uint64_t cached_bytes = 0;  // of it, in the cache
  bool whole = false;         // every block is there
};

// Key -> the cached version of every object of `bucket` in the cache at `dir`. kNotFound when the
// directory has no index.
[[nodiscard]] Result<std::unordered_map<std::string, CachedVersion>> ReadCacheContents(
    const std::string& dir, const std::string& bucket);

}  // namespace reelfs::cache

// NegativeCache: names recently found not to exist, so a repeated lookup of a missing name (a
// shell's PATH search, Python's import probing) costs no S3 request (docs/semantics.md
// "Caching"). Bounded LRU with a TTL: at most `capacity` keys, each trusted for `ttl`.
//
// Thread-safety: none; the owner serialises calls under its mutex.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"

namespace reelfs::fuse {

class NegativeCache {
 public:
  NegativeCache(size_t capacity, Clock::Duration ttl) : capacity_(capacity), ttl_(ttl) {}

  // True if `key` was recorded missing within the TTL (an expired entry is removed).
  bool Contains(const std::string& key, Clock::TimePoint now);
  void Insert(const std::string& key, Clock::TimePoint now);
  void Erase(const std::string& key);
  size_t size() const { return map_.size(); }

 private:
  struct Item {
    std::string key;
    Clock::TimePoint expiry;
  };
  const size_t capacity_;
  const Clock::Duration ttl_;
  std::list<Item> lru_;  // most recently inserted or hit first
  std::unordered_map<std::string, std::list<Item>::iterator> map_;
};

}  // namespace reelfs::fuse

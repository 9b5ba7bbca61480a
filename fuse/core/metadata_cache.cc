#include "fuse/core/metadata_cache.h"

namespace reelfs::fuse {

bool NegativeCache::Contains(const std::string& key, Clock::TimePoint now) {
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  if (now >= it->second->expiry) {
    lru_.erase(it->second);
    map_.erase(it);
    return false;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return true;
}

void NegativeCache::Insert(const std::string& key, Clock::TimePoint now) {
  if (capacity_ == 0 || ttl_ <= Clock::Duration::zero()) return;
  Erase(key);
  lru_.push_front(Item{key, now + ttl_});
  map_.emplace(key, lru_.begin());
  while (map_.size() > capacity_) {
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void NegativeCache::Erase(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  lru_.erase(it->second);
  map_.erase(it);
}

}  // namespace reelfs::fuse

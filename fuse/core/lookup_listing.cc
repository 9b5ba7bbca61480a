#include "fuse/core/lookup_listing.h"

#include <algorithm>
#include <utility>

namespace reelfs::fuse {

bool LookupListings::TryStart(InodeId dir, Clock::TimePoint now) {
  if (flights_.contains(dir)) return false;
  if (auto it = held_off_.find(dir); it != held_off_.end()) {
    if (now < it->second) return false;
    held_off_.erase(it);
  }
  flights_.emplace(dir, std::vector<ListingWaiter>{});
  return true;
}

void LookupListings::Wait(InodeId dir, ListingWaiter waiter) {
  flights_[dir].push_back(std::move(waiter));
}

std::vector<ListingWaiter> LookupListings::TakeImpatient(InodeId dir, uint32_t pages) {
  std::vector<ListingWaiter> out;
  auto it = flights_.find(dir);
  if (it == flights_.end()) return out;
  auto& waiters = it->second;
  auto keep =
      std::stable_partition(waiters.begin(), waiters.end(),
                            [pages](const ListingWaiter& w) { return w.max_pages > pages; });
  out.assign(std::make_move_iterator(keep), std::make_move_iterator(waiters.end()));
  waiters.erase(keep, waiters.end());
  return out;
}

std::vector<ListingWaiter> LookupListings::Finish(InodeId dir) {
  std::vector<ListingWaiter> out;
  if (auto node = flights_.extract(dir); !node.empty()) out = std::move(node.mapped());
  return out;
}

void LookupListings::HoldOff(InodeId dir, Clock::TimePoint now, Clock::Duration duration) {
  if (duration <= Clock::Duration::zero()) return;
  if (held_off_.size() >= kMaxHeldOff && !held_off_.contains(dir)) {
    std::erase_if(held_off_, [now](const auto& kv) { return kv.second <= now; });
    // Still full of live entries: forget one. The cost is one more bounded listing of it.
    if (held_off_.size() >= kMaxHeldOff) held_off_.erase(held_off_.begin());
  }
  held_off_[dir] = now + duration;
}

}  // namespace reelfs::fuse

// Lookup listings: a lookup that needs S3 in a directory with no fresh listing lists the whole
// directory once, in the background, and that lookup and every lookup arriving meanwhile are
// answered from the listing, which then stays installed for readdir and later lookups
// (docs/semantics.md "Lookup"). Reading N files of one directory in any order then costs the
// directory's LIST pages instead of N HEAD+LIST pairs.
//
// Two pieces:
//  - ListDirectoryBounded: ListDirectory (dir_listing.h) with a page budget. It stops, without a
//    listing, once the directory needs more than `max_pages` pages: a lookup must never make the
//    mount list (and hold in memory) a huge directory that nobody asked to read. An explicit
//    opendir still lists everything.
//  - LookupListings: the listings in flight, one per directory inode (single-flight), each with
//    the lookups queued on it (callbacks, never a blocked thread), and the directories not to list
//    again for a while (over the budget, or the listing failed).
//
// Thread-safety: ListDirectoryBounded may be called from any thread. LookupListings has no lock of
// its own: the owner (FileSystem) serialises every call under the mutex that also guards the
// installed listings, so a lookup either finds the installed listing or joins the flight; it
// never starts a second listing in the gap between the two.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/name_rules.h"
#include "fuse/core/types.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

// ListDirectoryBounded is in dir_listing.h, next to ListDirectory (its unbounded case).

// A lookup queued on its directory's listing.
struct ListingWaiter {
  std::string name;  // the name looked up
  std::string key;   // its key (the directory's prefix + name), for the HEAD+LIST fallback
  // The lookup stops waiting (and goes to HEAD+LIST) once the listing has fetched this many pages
  // and is still incomplete.
  uint32_t max_pages = 0;
  Callback<Entry> done;
};

class LookupListings {
 public:
  // True while a listing of `dir` is in flight.
  bool InFlight(InodeId dir) const { return flights_.contains(dir); }
  // Registers a listing of `dir` and returns true, unless one is in flight or listings of `dir`
  // are held off until after `now`. The caller then starts the listing (ListDirectoryBounded).
  bool TryStart(InodeId dir, Clock::TimePoint now);
  // Queues `waiter` on the listing of `dir`, which must be in flight.
  void Wait(InodeId dir, ListingWaiter waiter);
  // The listing of `dir` has fetched `pages` pages and is not complete: removes and returns the
  // waiters whose max_pages is reached (none when no listing of `dir` is in flight).
  std::vector<ListingWaiter> TakeImpatient(InodeId dir, uint32_t pages);
  // The listing of `dir` ended (complete, over budget or failed): removes it and returns every
  // waiter still queued.
  std::vector<ListingWaiter> Finish(InodeId dir);
  // No listing of `dir` starts for `duration` from `now` (a directory over the budget stays so for
  // a while; a failed listing is not retried by every lookup).
  void HoldOff(InodeId dir, Clock::TimePoint now, Clock::Duration duration);

  size_t in_flight() const { return flights_.size(); }

 private:
  // Inode numbers are never reused, so an entry of a forgotten directory is only stale memory;
  // HoldOff keeps the table bounded.
  static constexpr size_t kMaxHeldOff = 4096;

  std::unordered_map<InodeId, std::vector<ListingWaiter>> flights_;
  std::unordered_map<InodeId, Clock::TimePoint> held_off_;
};

}  // namespace reelfs::fuse

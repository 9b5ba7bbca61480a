// DirHandles: the open directories of a mount. OPENDIR (a handle on a snapshot of the listing,
// reused while fresh), READDIR / READDIRPLUS from that snapshot (so offsets stay stable while it
// is read), and RELEASEDIR, which drops the READDIRPLUS children nobody accepted. The inodes are
// Core's (core_internal.h): a handle pins its directory and its READDIRPLUS children.
//
// Thread-safety: every public method may be called concurrently from any thread. `mutex_` guards
// the handles; it is a leaf lock, never held while calling Core, the store or a callback (the
// lock order is in core_internal.h).
//
// Internal to fuse/core.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/types.h"

namespace reelfs::fuse::detail {

class Core;

struct DirHandle {
  InodeId ino = 0;
  InodeId parent = 0;
  std::shared_ptr<const DirListing> snapshot;
  Clock::TimePoint listed_at{};  // when the snapshot was listed
  std::vector<InodeId> pinned;   // READDIRPLUS children pinned until ReleaseDir
};

class DirHandles {
 public:
  explicit DirHandles(Core& core) : core_(core) {}

  void OpenDir(InodeId ino, Callback<uint64_t> done) EXCLUDES(mutex_);
  void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
               Callback<std::vector<DirEntry>> done) EXCLUDES(mutex_);
  void ReleaseDir(uint64_t dh) EXCLUDES(mutex_);
  // Forgets every handle (the file system is going away); nothing is unpinned.
  void Clear() EXCLUDES(mutex_);

 private:
  // Registers a handle on `snapshot` of `ino` (already pinned by Core) and returns its number.
  uint64_t Add(InodeId ino, InodeId parent, std::shared_ptr<const DirListing> snapshot,
               Clock::TimePoint listed_at) EXCLUDES(mutex_);

  Core& core_;           // owns this part
  mutable Mutex mutex_;  // leaf lock (core_internal.h)
  std::unordered_map<uint64_t, DirHandle> handles_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::fuse::detail

// TapeView: what a mount shows and accepts of the tape through extended attributes
// (docs/semantics.md "Extended attributes"): user.s3.* and user.hsm.* of a file (its tape state,
// refreshed by one shared HEAD when stale), user.hsm.summary of a directory (one subtree
// listing, cached and single-flight), user.hsm.request=stage for a file or a whole tree (restore
// requests in tape order, hsm/tape_order.h), and the root's user.reelfs.mount /
// user.reelfs.metrics. The inodes are Core's (core_internal.h).
//
// Thread-safety: every public method may be called concurrently from any thread. `mutex_` guards
// the summaries and the xattr waiters; it is a leaf lock, never held while calling Core, the
// store, the Restorer or a callback (the lock order is in core_internal.h).
//
// Internal to fuse/core.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "fuse/core/types.h"
#include "hsm/state.h"
#include "s3/types.h"

namespace reelfs::fuse::detail {

class Core;

// The xattr answers for a file, from a copy taken under the inode lock.
struct FileXattrView {
  std::string key;
  std::string etag;
  s3::ObjectInfo object;
  bool offline_by_get = false;  // a GET said InvalidObjectState after `object` was observed
};

// user.hsm.summary of one directory: the cached value and the readers waiting for a computation.
struct SummaryCache {
  std::string value;
  Clock::TimePoint expiry{};
  bool in_flight = false;
  std::vector<Callback<std::string>> waiters;
};

struct XattrWaiter {
  std::string name;
  Callback<std::string> done;
};

class TapeView {
 public:
  explicit TapeView(Core& core) : core_(core) {}

  void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) EXCLUDES(mutex_);
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) EXCLUDES(mutex_);
  void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                std::function<void(Status)> done) EXCLUDES(mutex_);

 private:
  // The state of a listed or HEADed object, with the Restorer's knowledge of live requests for
  // archived objects the server says nothing about. Call without a lock (ledger I/O).
  hsm::State ClassifyWithRequests(const s3::ObjectInfo& info);
  std::string FileXattrValue(const FileXattrView& view, std::string_view name);
  // A stale state: one HEAD, shared by every getxattr of `ino` meanwhile, then the answers.
  void RefreshThenAnswer(InodeId ino, std::string key, std::string name, Callback<std::string> done)
      EXCLUDES(mutex_);
  std::vector<XattrWaiter> TakeXattrWaiters(InodeId ino) EXCLUDES(mutex_);
  void Summary(InodeId ino, std::string prefix, Callback<std::string> done) EXCLUDES(mutex_);
  // A summary computation ended: caches a value and returns the readers to answer.
  std::vector<Callback<std::string>> FinishSummary(InodeId ino, const Result<std::string>& out)
      EXCLUDES(mutex_);
  void StageTree(std::string prefix, std::function<void(Status)> done);

  Core& core_;           // owns this part
  mutable Mutex mutex_;  // leaf lock (core_internal.h)
  // Single-flight HEADs refreshing a stale state for user.hsm.* getxattrs, per inode.
  std::unordered_map<InodeId, std::vector<XattrWaiter>> xattr_waiters_ GUARDED_BY(mutex_);
  std::unordered_map<InodeId, SummaryCache> summaries_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::fuse::detail

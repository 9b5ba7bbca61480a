// Core: the state and logic behind FileSystem (filesystem.h), shared by the files that implement
// it by concept: core_namespace.cc (attributes, LOOKUP, FORGET, GETATTR), core_dirs.cc (OPENDIR,
// READDIR, RELEASEDIR), core_files.cc (OPEN, READ, offline reads, RELEASE), core_xattr.cc (the
// xattrs, summaries and stage requests) and filesystem.cc (construction, STATFS, counters, the
// public wrapper).
//
// Lifetime: the public FileSystem object owns a shared Core; every callback handed to the store
// holds the Core, so a response that arrives after the FileSystem is destroyed still finds its
// state (and still calls its `done` exactly once).
//
// Thread-safety: every public method may be called concurrently from any thread. One mutex
// (`mutex_`, a leaf lock) guards the inode table, caches and handles; it is never held while
// calling the store, a Prefetcher or a callback.
//
// Internal to fuse/core, not for other modules: include fuse/core/filesystem.h instead.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/inode_table.h"
#include "fuse/core/lookup_listing.h"
#include "fuse/core/metadata_cache.h"
#include "fuse/core/prefetcher.h"
#include "hsm/state.h"

namespace reelfs::fuse::detail {

inline Status Stale(InodeId ino) {
  return ErrnoToStatus(ESTALE, fmt::format("inode {} is unknown", ino));
}

struct DirHandle {
  InodeId ino = 0;
  InodeId parent = 0;
  std::shared_ptr<const DirListing> snapshot;
  Clock::TimePoint listed_at{};  // when the snapshot was listed
  std::vector<InodeId> pinned;   // READDIRPLUS children pinned until ReleaseDir
};

struct FileHandle {
  InodeId ino = 0;
  std::shared_ptr<Prefetcher> prefetcher;
  ObjectRef ref;          // what the prefetcher reads (recreated after a restore)
  bool nonblock = false;  // O_NONBLOCK: reads of an offline object answer EAGAIN at once
};

// One READ of a file handle, kept across the waits for a restore it may need.
struct ReadOp {
  InodeId ino = 0;
  uint64_t fh = 0;
  uint64_t offset = 0;
  size_t size = 0;
  std::shared_ptr<CancellationToken> interrupt;
  Callback<ReadData> done;
  std::optional<Clock::TimePoint> deadline;  // set by the first wait
  int waits = 0;
};

// The xattr answers for a file, from a copy taken under the lock.
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

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(std::shared_ptr<s3::ObjectStore> store, MountOptions options,
       std::shared_ptr<BufferPool> pool, std::shared_ptr<MemoryBudget> budget, Clock& clock,
       std::shared_ptr<hsm::Restorer> restorer, DataPath data_path)
      : store_(std::move(store)),
        restorer_(std::move(restorer)),
        data_path_(std::move(data_path)),
        options_(std::move(options)),
        pool_(std::move(pool)),
        budget_(std::move(budget)),
        clock_(clock),
        mount_time_(clock.WallNow()),
        warn_(std::make_shared<WarnOnce>()),
        negative_(options_.negative_cache_entries, options_.negative_ttl),
        inodes_(MakeRoot()) {}

  void Lookup(InodeId parent, std::string_view name, Callback<Entry> done);
  void Forget(InodeId ino, uint64_t nlookup);
  void GetAttr(InodeId ino, Callback<Attributes> done);
  void OpenDir(InodeId ino, Callback<uint64_t> done);
  void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
               Callback<std::vector<DirEntry>> done);
  void AcceptDirEntries(const std::vector<DirEntry>& accepted);
  void ReleaseDir(uint64_t dh);
  void Open(InodeId ino, int flags, Callback<OpenedFile> done);
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
            std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done);
  void Release(uint64_t fh);
  void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done);
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done);
  void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                std::function<void(Status)> done);
  FsStats StatFs();
  FsCounters counters() const;
  const MountOptions& options() const { return options_; }
  void Shutdown();

 private:
  InodeRecord MakeRoot() const {
    InodeRecord root;
    root.key = options_.prefix;
    root.attr = DirAttr(kRootInode);
    return root;
  }
  Attributes DirAttr(InodeId ino) const;
  Attributes FileAttr(InodeId ino, const s3::ObjectInfo& info, bool readable) const;
  // Whether the record's object can be read with a GET as far as we know (no ledger lookup: it
  // only tells staging from offline, which are both unreadable).
  bool ReadableLocked(const InodeRecord& rec) const REQUIRES(mutex_);
  // Stores what a listing or HEAD observed at `observed` (older news than the record's is
  // dropped) and derives attributes, ETag and expiry from it.
  void RecordObjectLocked(InodeRecord* rec, const s3::ObjectInfo& info, Clock::TimePoint observed)
      REQUIRES(mutex_);
  // A GET answered InvalidObjectState: the object is offline now.
  void MarkOfflineLocked(InodeRecord* rec) REQUIRES(mutex_);
  // The state of a listed or HEADed object, with the Restorer's knowledge of live requests for
  // archived objects the server says nothing about. Call without the lock (ledger I/O).
  hsm::State ClassifyWithRequests(const s3::ObjectInfo& info);
  std::string FileXattrValue(const FileXattrView& view, std::string_view name);
  void StartRead(std::shared_ptr<ReadOp> op);
  void OnOffline(std::shared_ptr<ReadOp> op, bool from_get);
  void WaitForRestore(std::shared_ptr<ReadOp> op, std::string key);
  void ReplacePrefetcher(uint64_t fh);
  void Summary(InodeId ino, std::string prefix, Callback<std::string> done);
  void StageTree(std::string prefix, std::function<void(Status)> done);
  std::string MountJson() const;
  std::string MetricsJson() const;
  Clock::TimePoint Expiry() const { return clock_.Now() + options_.metadata_ttl; }
  std::string ChildKey(const InodeRecord& parent, std::string_view name, bool is_dir) const {
    return parent.key + std::string(name) + (is_dir ? "/" : "");
  }
  // Records a looked-up child (one more kernel reference) and returns its Entry.
  // `observed`: when `info` was listed or HEADed.
  Result<Entry> AddEntryLocked(InodeId parent, std::string_view name, bool is_dir,
                               const s3::ObjectInfo* info, bool count, Clock::TimePoint observed)
      REQUIRES(mutex_);
  // The live inode `ino` of the wanted kind: ESTALE when unknown, ENOTDIR / EISDIR when of the
  // other kind (kAny accepts both). `what` names the operation in the message.
  enum class Want { kAny, kDir, kFile };
  Result<InodeRecord*> FindLocked(InodeId ino, Want want, std::string_view what) REQUIRES(mutex_);
  // The preamble of most operations: FindLocked, entered with `lock` held on mutex_. On failure
  // it releases the lock, answers `done` with FindLocked's error (never replying under the lock)
  // and returns null; the caller then returns at once. `done` is any callback taking a Status
  // (Callback<T>, std::function<void(Status)>). The analysis cannot follow a release on one path
  // only: it checks the callers (REQUIRES), not the body.
  template <class Done>
  InodeRecord* FindOrFail(MutexLock& lock, InodeId ino, Want want, std::string_view what,
                          Done& done) REQUIRES(mutex_) NO_THREAD_SAFETY_ANALYSIS {
    Result<InodeRecord*> found = FindLocked(ino, want, what);
    if (found.ok()) return *found;
    lock.unlock();
    done(std::move(found).status());
    return nullptr;
  }
  Entry MakeEntry(const InodeRecord& record) const;
  void LookupRemote(InodeId parent, std::string name, std::string key, Callback<Entry> done);
  // Lookups answered from directory listings need a reusable listing and a budget.
  bool LookupListingsEnabled() const {
    return options_.lookup_listing_pages > 0 && options_.metadata_ttl > std::chrono::seconds(0);
  }
  // Lists directory `dir` (prefix `prefix`) for the lookups queued on it (lookup_listing.h).
  void StartLookupListing(InodeId dir, std::string prefix);
  // The listing of `dir` ended: installs it and answers its waiters, or sends them to HEAD+LIST.
  void FinishLookupListing(InodeId dir, Result<std::shared_ptr<const DirListing>> listing);
  // HEAD for a file whose cached attributes expired; updates the inode on success.
  void RefreshFile(InodeId ino, std::string key, Callback<InodeRecord> done);
  void FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                  Callback<OpenedFile> done);

  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<hsm::Restorer> restorer_;  // may be null
  const DataPath data_path_;                       // channel null: reads over store_
  const MountOptions options_;
  const std::shared_ptr<BufferPool> pool_;
  const std::shared_ptr<MemoryBudget> budget_;
  Clock& clock_;
  const std::chrono::system_clock::time_point mount_time_;
  const std::shared_ptr<WarnOnce> warn_;  // own leaf lock

  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> list_requests_{0};
  std::atomic<uint64_t> head_requests_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> offline_reads_{0};
  std::atomic<uint64_t> restore_waits_{0};
  std::atomic<uint64_t> xattr_refreshes_{0};

  // Guards everything below. Leaf lock: never held while calling the store, a Prefetcher or a
  // callback (WarnOnce's lock is never taken under it either).
  mutable Mutex mutex_;
  NegativeCache negative_ GUARDED_BY(mutex_);
  InodeTable inodes_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, DirHandle> dir_handles_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, FileHandle> file_handles_ GUARDED_BY(mutex_);
  LookupListings lookup_listings_ GUARDED_BY(mutex_);
  uint64_t next_handle_ GUARDED_BY(mutex_) = 1;
  // Single-flight HEADs refreshing a stale state for user.hsm.* getxattrs, per inode.
  std::unordered_map<InodeId, std::vector<XattrWaiter>> xattr_waiters_ GUARDED_BY(mutex_);
  std::unordered_map<InodeId, SummaryCache> summaries_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::fuse::detail

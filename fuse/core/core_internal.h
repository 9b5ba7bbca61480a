// Core: the state and logic behind FileSystem (filesystem.h), split by concept. Core itself owns
// the inodes: the inode table, the negative cache and the lookup listings (core_namespace.cc:
// attributes and entries, the tape state of each file, LOOKUP, FORGET, GETATTR, the refreshing
// HEAD), the store, options, pool, budget and counters (filesystem.cc: construction, STATFS,
// counters, the JSON snapshots, Shutdown). Three parts own the rest, each in its own files:
//  - FileHandles (file_handles.h): open files, READ, reads of offline objects, RELEASE;
//  - DirHandles (dir_handles.h): directory handles on listing snapshots, READDIR, RELEASEDIR;
//  - TapeView (tape_view.h): the xattrs, user.hsm.summary, user.hsm.request=stage;
//  - WriteHandles (write_handles.h): files being written, CREATE, WRITE, FLUSH/FSYNC.
// Writes' names (mkdir, unlink, rmdir, the names of files being written) are Core's: its
// LocalEntries (local_entries.h), in core_local.cc.
// A part reaches the inodes only through Core's public methods below, each of which takes Core's
// lock for one step and answers with a copy; Core forwards each FileSystem operation to its part.
//
// Lifetime: the public FileSystem object owns a shared Core, and Core owns its parts; every
// callback handed to the store, a Prefetcher or the Restorer holds the Core, so a response that
// arrives after the FileSystem is destroyed still finds its state (and still calls its `done`
// exactly once).
//
// Thread-safety: every public method may be called concurrently from any thread.
// Lock order: Core's `mutex_`, FileHandles', DirHandles', TapeView's and WriteHandles' mutexes are
// all leaf locks, never nested: no code holds two of them at once (a part calls Core, and Core
// calls a part, only with its own lock released), and none is held while calling the store, a
// Prefetcher, the Restorer or a callback (WarnOnce's lock is never taken under them either).
// Every method that takes one says EXCLUDES for it, so clang's -Wthread-safety checks the
// re-entries it can see; with no nesting there is no order to invert.
//
// Internal to fuse/core, not for other modules: include fuse/core/filesystem.h instead.
#pragma once

#include <atomic>
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
#include "fuse/core/cached_file_reads.h"
#include "fuse/core/dir_handles.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/file_handles.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/inode_table.h"
#include "fuse/core/local_entries.h"
#include "fuse/core/lookup_listing.h"
#include "fuse/core/metadata_cache.h"
#include "fuse/core/part_sender.h"
#include "fuse/core/splicing_prefetcher.h"
#include "fuse/core/tape_view.h"
#include "fuse/core/write_handles.h"
#include "hsm/state.h"

namespace reelfs::fuse::detail {

inline Status Stale(InodeId ino) {
  return Status(StatusCode::kNotFound, StatusReason::kStaleInode,
                fmt::format("inode {} is unknown", ino));
}

// The counters of FsCounters that are not sizes of a container; relaxed atomics, no lock.
struct CoreCounters {
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> list_requests{0};
  std::atomic<uint64_t> head_requests{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> direct_reads{0};
  std::atomic<uint64_t> offline_reads{0};
  std::atomic<uint64_t> restore_waits{0};
  std::atomic<uint64_t> xattr_refreshes{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> files_written{0};
  std::atomic<uint64_t> uploads_failed{0};
  std::atomic<uint64_t> deletes{0};
  std::atomic<uint64_t> renames{0};
  std::atomic<uint64_t> copy_parts{0};
  std::atomic<uint64_t> backing_opens{0};
};

inline void Count(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

// What OPEN needs of a file: its attributes when still fresh, else its key to HEAD.
struct FileForOpen {
  std::string key;
  bool fresh = false;  // etag and size are valid; no HEAD needed
  std::string etag;
  uint64_t size = 0;
};

// A file inode pinned by a new handle.
struct OpenedInode {
  std::string key;
  bool keep_cache = false;  // the ETag is the one of the previous open
  bool readable = false;    // as far as we know, a GET would succeed
};

// A copy of one inode taken under the lock, for xattrs and stage requests.
struct InodeFacts {
  bool is_dir = false;
  std::string key;  // files: the object key; directories: the prefix
  std::string etag;
  uint64_t size = 0;
  TapeState tape;         // files
  bool readable = true;   // files: as far as we know, a GET would succeed
  Clock::TimePoint seen;  // files: the later of tape.observed and tape.offline_at
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(std::shared_ptr<s3::ObjectStore> store, MountOptions options,
       std::shared_ptr<BufferPool> pool, std::shared_ptr<MemoryBudget> budget, Clock& clock,
       std::shared_ptr<hsm::Restorer> restorer, DataPath data_path);

  // FileSystem's operations: the namespace here, the rest forwarded to the parts.
  void Lookup(InodeId parent, std::string_view name, Callback<Entry> done) EXCLUDES(mutex_);
  void Forget(InodeId ino, uint64_t nlookup) EXCLUDES(mutex_);
  void GetAttr(InodeId ino, Callback<Attributes> done) EXCLUDES(mutex_);
  void AcceptDirEntries(const std::vector<DirEntry>& accepted) EXCLUDES(mutex_);
  FsStats StatFs() EXCLUDES(mutex_);
  FsCounters counters() const EXCLUDES(mutex_);
  const MountOptions& options() const { return options_; }
  void Shutdown();

  FileHandles& files() { return files_; }
  DirHandles& dirs() { return dirs_; }
  TapeView& tape() { return tape_; }
  WriteHandles& writes() { return writes_; }

  // What the parts share.
  const std::shared_ptr<s3::ObjectStore>& store() const { return store_; }
  hsm::Restorer* restorer() const { return restorer_.get(); }  // may be null
  const DataPath& data_path() const { return data_path_; }
  const std::shared_ptr<BufferPool>& pool() const { return pool_; }
  const std::shared_ptr<MemoryBudget>& budget() const { return budget_; }
  // How uploads send their parts: the data channel's sender with --rdma, else the store's.
  const std::shared_ptr<PartSender>& part_sender() const { return part_sender_; }
  const std::shared_ptr<WarnOnce>& warn() const { return warn_; }
  Clock& clock() const { return clock_; }
  CoreCounters& stats() { return stats_; }
  const std::shared_ptr<SpliceStats>& splice_stats() const { return splice_stats_; }
  const std::shared_ptr<CachedFileStats>& cached_file_stats() const { return cached_file_stats_; }
  // Handle numbers for files and directories, from one sequence (a handle never means both).
  uint64_t NextHandle() { return next_handle_.fetch_add(1, std::memory_order_relaxed); }
  std::string MountJson() const;
  std::string MetricsJson() const;

  // The inode operations of the parts; each takes the lock for one step. `what` names the
  // operation in error messages.
  enum class Want { kAny, kDir, kFile };
  // The inode `ino` of the wanted kind, copied: ESTALE when unknown, ENOTDIR / EISDIR when of the
  // other kind (kAny accepts both).
  Result<InodeFacts> Facts(InodeId ino, Want want, std::string_view what) EXCLUDES(mutex_);
  // HEAD for a file whose cached attributes expired; updates the inode on success and answers
  // with its new attributes.
  void RefreshFile(InodeId ino, std::string key, Callback<AttrCache> done) EXCLUDES(mutex_);
  Result<FileForOpen> FileToOpen(InodeId ino) EXCLUDES(mutex_);
  // Records an open of the file at `etag` (keep_cache) and pins the inode for the handle.
  Result<OpenedInode> PinOpened(InodeId ino, const std::string& etag) EXCLUDES(mutex_);
  // The file was seen unreadable within tape.state_ttl: a GET would only fail again.
  bool KnownOffline(InodeId ino) EXCLUDES(mutex_);
  // The local cache (DataPath::cache) holds every byte of this version of `key`: reads of it
  // need no server. False without a cache. Takes only the cache's lock.
  bool CachedWhole(std::string_view key, std::string_view etag) const;
  // FileSystem::SetBackingFiles.
  void SetBackingFiles(bool on) { backing_files_.store(on, std::memory_order_relaxed); }
  bool backing_files() const { return backing_files_.load(std::memory_order_relaxed); }
  // A GET answered InvalidObjectState: the object is offline now.
  void MarkOffline(InodeId ino) EXCLUDES(mutex_);
  // user.hsm.request=refresh: forgets what this mount knows of the tape state of `ino` (a file)
  // or of every file under it (a directory), so the next access asks S3 instead of answering
  // from a state up to tape.state_ttl old. `reelfs stage --wait` sends it once its objects are
  // readable. Memory only; returns how many files were unreadable here and are forgotten.
  size_t ForgetTapeState(InodeId ino) EXCLUDES(mutex_);
  // A restore wait saw the object readable (`info`, now).
  void RecordObject(InodeId ino, const s3::ObjectInfo& info) EXCLUDES(mutex_);
  // A directory handle on the inode's listing: the installed one while fresh (pinned = true:
  // the inode is pinned for the handle), else the prefix to list (nothing pinned).
  struct DirToOpen {
    bool pinned = false;
    InodeId parent = 0;
    std::shared_ptr<const DirListing> listing;
    Clock::TimePoint listed_at{};
    std::string prefix;
  };
  Result<DirToOpen> DirectoryToOpen(InodeId ino) EXCLUDES(mutex_);
  // Installs a fresh listing of `ino` (readdir and lookups are served from it) and pins the
  // inode for a handle on it; ESTALE when the inode is gone.
  Result<DirToOpen> InstallListing(InodeId ino, std::shared_ptr<const DirListing> listing)
      EXCLUDES(mutex_);
  // The entries of `snapshot` of directory `ino` after `offset` (READDIR's offsets), at most
  // `max_entries`. With `plus`, each child gets an inode and an Entry, and is pinned (its number
  // appended to `pinned`) until Unpin.
  Result<std::vector<DirEntry>> ReadDirEntries(InodeId ino, InodeId parent,
                                               const DirListing& snapshot,
                                               Clock::TimePoint listed_at, uint64_t offset,
                                               size_t max_entries, bool plus,
                                               std::vector<InodeId>* pinned) EXCLUDES(mutex_);
  void Unpin(const std::vector<InodeId>& inodes) EXCLUDES(mutex_);

  // The local entries of writes (core_local.cc, local_entries.h).
  // A new file `name` in `parent`, being written: its Entry (one lookup) with the inode pinned
  // for the handle, and its key in `key`.
  // `flags`: CREATE's; O_TRUNC replaces an object S3 has (write.allow_overwrite), O_EXCL of such
  // a name is EEXIST-class.
  Result<Entry> CreateLocalFile(InodeId parent, std::string_view name, int flags, std::string* key)
      EXCLUDES(mutex_);
  // Existing file `ino`, opened with O_TRUNC, becomes a file being written (size 0, EBUSY to
  // other opens) until its upload ends: PublishFile makes it the new object; AbandonFile puts
  // the old object's attributes back (S3 still has it). Its key, or EPERM-class without
  // write.allow_overwrite.
  Result<std::string> BeginOverwrite(InodeId ino) EXCLUDES(mutex_);
  void SetWritingSize(InodeId ino, uint64_t size) EXCLUDES(mutex_);
  // The upload of `ino` completed: the file is the object `info` from now on.
  void PublishFile(InodeId ino, const s3::ObjectInfo& info) EXCLUDES(mutex_);
  // The upload of `ino` failed or was dropped: the name goes, nothing was stored (an overwrite:
  // the old object stays, and so does its name).
  void AbandonFile(InodeId ino) EXCLUDES(mutex_);
  // Unpins the inode of a finished write handle.
  void UnpinInode(InodeId ino) EXCLUDES(mutex_);
  Result<Entry> MakeLocalDir(InodeId parent, std::string_view name) EXCLUDES(mutex_);
  void Unlink(InodeId parent, std::string_view name, std::function<void(Status)> done)
      EXCLUDES(mutex_);
  void RmDir(InodeId parent, std::string_view name, std::function<void(Status)> done)
      EXCLUDES(mutex_);
  // RENAME of a file (core_rename.cc; FileSystem::Rename says what is refused).
  void Rename(InodeId parent, std::string_view name, InodeId new_parent, std::string_view new_name,
              unsigned flags, std::function<void(Status)> done) EXCLUDES(mutex_);
  // SETATTR that is not a truncate of a file being written (WriteHandles answers those).
  void SetAttr(InodeId ino, const FileSystem::SetAttrRequest& request, Callback<Attributes> done)
      EXCLUDES(mutex_);
  // The status every write meets on a read-only mount.
  Status ReadOnly(std::string_view op) const;

 private:
  // What an overwritten file was, kept until its upload ends (BeginOverwrite).
  struct Replaced {
    AttrCache attrs;
    TapeState tape;
    std::optional<LocalEntry> local;  // its local entry then (kWritten), if any
  };
  // What a rename needs to know before it asks S3 (core_rename.cc).
  struct RenameSteps {
    std::string source_key;
    std::string dest_key;
    bool dest_known = false;   // the destination's existence is known without a HEAD
    bool dest_exists = false;  // (when known) an object has the destination name
  };
  // `busy` (when not null) gets the inode of a source or destination being written (EBUSY).
  Result<RenameSteps> CheckRenameLocked(InodeId parent, std::string_view name, InodeId new_parent,
                                        std::string_view new_name, unsigned flags, InodeId* busy)
      REQUIRES(mutex_);
  // Rename; `may_wait`: a name whose empty file was closed but not yet released is waited for
  // (WriteHandles::AfterEmptyClose) once, then checked again.
  void RenameOnce(InodeId parent, std::string name, InodeId new_parent, std::string new_name,
                  unsigned flags, bool may_wait, std::function<void(Status)> done) EXCLUDES(mutex_);
  // The destination exists: EEXIST with RENAME_NOREPLACE, EPERM without --allow-overwrite.
  Status RefuseReplace(const RenameSteps& steps, unsigned flags) const;
  // The copy and the delete succeeded (`deleted`), or only the copy: the caches follow S3.
  void FinishRenameLocked(InodeId parent, std::string_view name, InodeId new_parent,
                          std::string_view new_name, const RenameSteps& steps,
                          const s3::ObjectInfo& dest, bool deleted) REQUIRES(mutex_);
  // A file was published below directory `parent`: the directories made here above it exist in
  // S3 too now (PublishFile, FinishRenameLocked).
  void PublishedBelowLocked(InodeId parent) REQUIRES(mutex_);
  // Marks `rec` (named `key`) as a new, empty file being written, pinned for its handle.
  void StartWritingLocked(InodeRecord* rec, const std::string& key) REQUIRES(mutex_);
  // Local entries: the directory is pinned while it has any (local_entries.h).
  void SetLocalLocked(InodeId dir, std::string_view name, LocalEntry entry) REQUIRES(mutex_);
  void EraseLocalLocked(InodeId dir, std::string_view name) REQUIRES(mutex_);
  // Names of `d`'s cached listing that this mount has not removed since (unlink, rmdir).
  size_t ListedAndNotRemovedLocked(const InodeRecord& d) const REQUIRES(mutex_);
  // A fresh listing of `dir` was installed: retires what it confirms.
  void ReconcileLocked(InodeId dir, const DirListing& listing) REQUIRES(mutex_);
  // What a name in `parent` is, for the write operations: from the local entries, a fresh
  // listing or a fresh child. nullopt: not known without asking S3.
  enum class NameIs { kAbsent, kFile, kDir, kWriting };
  std::optional<NameIs> KnownNameLocked(const InodeRecord& parent, std::string_view name)
      REQUIRES(mutex_);
  // The lookup answer of a local entry.
  Result<Entry> LocalLookupLocked(InodeId parent, std::string_view name, const LocalEntry& e)
      REQUIRES(mutex_);
  InodeRecord MakeRoot() const;
  Attributes DirAttr(InodeId ino) const;
  Attributes FileAttr(InodeId ino, const s3::ObjectInfo& info, bool readable) const;
  // Whether the record's object can be read with a GET as far as we know (no ledger lookup: it
  // only tells staging from offline, which are both unreadable).
  bool ReadableLocked(const InodeRecord& rec) const REQUIRES(mutex_);
  // Stores what a listing or HEAD observed at `observed` (older news than the record's is
  // dropped) and derives attributes, ETag and expiry from it.
  void RecordObjectLocked(InodeRecord* rec, const s3::ObjectInfo& info, Clock::TimePoint observed)
      REQUIRES(mutex_);
  void MarkOfflineLocked(InodeRecord* rec) REQUIRES(mutex_);
  Clock::TimePoint Expiry() const { return clock_.Now() + options_.metadata_ttl; }
  std::string ChildKey(const InodeRecord& parent, std::string_view name, bool is_dir) const {
    return parent.id.key + std::string(name) + (is_dir ? "/" : "");
  }
  // Records a looked-up child (one more kernel reference) and returns its Entry.
  // `observed`: when `info` was listed or HEADed.
  Result<Entry> AddEntryLocked(InodeId parent, std::string_view name, bool is_dir,
                               const s3::ObjectInfo* info, bool count, Clock::TimePoint observed)
      REQUIRES(mutex_);
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
  void LookupRemote(InodeId parent, std::string name, std::string key, Callback<Entry> done)
      EXCLUDES(mutex_);
  // Lookups answered from directory listings need a reusable listing and a budget.
  bool LookupListingsEnabled() const {
    return options_.lookup_listing_pages > 0 && options_.metadata_ttl > std::chrono::seconds(0);
  }
  // Lists directory `dir` (prefix `prefix`) for the lookups queued on it (lookup_listing.h).
  void StartLookupListing(InodeId dir, std::string prefix) EXCLUDES(mutex_);
  // The listing of `dir` ended: installs it and answers its waiters, or sends them to HEAD+LIST.
  void FinishLookupListing(InodeId dir, Result<std::shared_ptr<const DirListing>> listing)
      EXCLUDES(mutex_);

  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<hsm::Restorer> restorer_;  // may be null
  const DataPath data_path_;                       // channel null: reads over store_
  std::atomic<bool> backing_files_{false};         // SetBackingFiles
  const MountOptions options_;
  const std::shared_ptr<BufferPool> pool_;
  const std::shared_ptr<MemoryBudget> budget_;
  const std::shared_ptr<PartSender> part_sender_;
  Clock& clock_;
  const std::chrono::system_clock::time_point mount_time_;
  const std::shared_ptr<WarnOnce> warn_;  // own leaf lock

  CoreCounters stats_;
  const std::shared_ptr<SpliceStats> splice_stats_ = std::make_shared<SpliceStats>();
  const std::shared_ptr<CachedFileStats> cached_file_stats_ = std::make_shared<CachedFileStats>();
  std::atomic<uint64_t> next_handle_{1};

  // Guards the inodes and their caches. Leaf lock (see the lock order above).
  mutable Mutex mutex_;
  NegativeCache negative_ GUARDED_BY(mutex_);
  InodeTable inodes_ GUARDED_BY(mutex_);
  LookupListings lookup_listings_ GUARDED_BY(mutex_);
  LocalEntries local_ GUARDED_BY(mutex_);
  std::unordered_map<InodeId, Replaced> replaced_ GUARDED_BY(mutex_);  // overwrites in progress

  // The parts; each has its own leaf lock. They refer back to this Core.
  FileHandles files_;
  DirHandles dirs_;
  TapeView tape_;
  WriteHandles writes_;
};

}  // namespace reelfs::fuse::detail

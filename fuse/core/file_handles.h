// FileHandles: the open files of a mount. OPEN (a handle with its Prefetcher), READ through it,
// the answer to a read of an offline object per tape.offline (EACCES, EAGAIN after a restore
// request, or an asynchronous, interruptible wait for the restore, then a fresh prefetcher), and
// RELEASE. The inodes behind the handles are Core's (core_internal.h): a handle pins its inode.
//
// Thread-safety: every public method may be called concurrently from any thread. `mutex_` guards
// the handles; it is a leaf lock, never held while calling Core, the store, a Prefetcher, the
// Restorer or a callback (the lock order is in core_internal.h).
//
// Internal to fuse/core.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/cancel.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/prefetcher.h"
#include "fuse/core/types.h"

namespace reelfs::fuse::detail {

class Core;

struct FileHandle {
  InodeId ino = 0;
  std::shared_ptr<Prefetcher> prefetcher;
  ObjectRef ref;          // what the prefetcher reads (recreated after a restore)
  bool nonblock = false;  // O_NONBLOCK: reads of an offline object answer EAGAIN at once
};

// One READ of a file handle, kept across the waits for a restore it may need. Either a Read
// (`done`: the bytes as ReadData) or a ReadTo (`to` set, `done_to`: the byte count and path).
struct ReadOp {
  ReadOp(InodeId i, uint64_t h, uint64_t off, size_t n, std::shared_ptr<CancellationToken> cancel)
      : ino(i), fh(h), offset(off), size(n), interrupt(std::move(cancel)) {}
  InodeId ino = 0;
  uint64_t fh = 0;
  uint64_t offset = 0;
  size_t size = 0;
  std::shared_ptr<CancellationToken> interrupt;
  Callback<ReadData> done;
  std::optional<FileSystem::ReadTarget> to;
  Callback<FileSystem::ReadToResult> done_to;
  std::optional<Clock::TimePoint> deadline;  // set by the first wait
  int waits = 0;
};

class FileHandles {
 public:
  explicit FileHandles(Core& core) : core_(core) {}

  void Open(InodeId ino, int flags, uint32_t pid, Callback<OpenedFile> done) EXCLUDES(mutex_);
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
            std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) EXCLUDES(mutex_);
  // FileSystem::ReadTo: one ranged GET into the sink (or the offline answer).
  void ReadTo(InodeId ino, uint64_t fh, uint64_t offset, size_t size, FileSystem::ReadTarget target,
              std::shared_ptr<CancellationToken> interrupt, Callback<FileSystem::ReadToResult> done)
      EXCLUDES(mutex_);
  void Release(uint64_t fh) EXCLUDES(mutex_);
  // Closes every handle's prefetcher (the file system is going away).
  void CloseAll() EXCLUDES(mutex_);
  size_t size() const EXCLUDES(mutex_);

 private:
  void FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                  Callback<OpenedFile> done) EXCLUDES(mutex_);
  void StartRead(std::shared_ptr<ReadOp> op) EXCLUDES(mutex_);
  void StartDirect(std::shared_ptr<ReadOp> op, ObjectRef ref);
  void StartFetch(std::shared_ptr<ReadOp> op, ObjectRef ref, uint64_t length);
  // What a direct GET or fetch answered, checked against the handle's pin (answer_check.h).
  struct DirectAnswer {
    std::string etag;
    uint64_t object_size = 0;
    uint64_t bytes = 0;
    rdmaio::DataPath via = rdmaio::DataPath::kHttp;
  };
  void FinishDirect(std::shared_ptr<ReadOp> op, const ObjectRef& ref, uint64_t length,
                    Result<DirectAnswer> r);
  void OnOffline(std::shared_ptr<ReadOp> op, bool from_get) EXCLUDES(mutex_);
  void WaitForRestore(std::shared_ptr<ReadOp> op, std::string key);
  void ReplacePrefetcher(uint64_t fh) EXCLUDES(mutex_);
  // Puts `prefetcher` (a CachedFilePrefetcher over the handle's own) in place for `fh`'s READs.
  void ServeFromFile(uint64_t fh, std::shared_ptr<Prefetcher> prefetcher) EXCLUDES(mutex_);
  // The data channel a new prefetcher of this version reads through: none for an object the local
  // cache holds whole.
  std::shared_ptr<rdmaio::DataChannel> ChannelFor(const std::string& key,
                                                  const std::string& etag) const;
  // A handle's read path: the Prefetcher, under a SplicingPrefetcher where spliced reads apply.
  std::unique_ptr<Prefetcher> MakePrefetcher(const ObjectRef& ref) const;

  Core& core_;           // owns this part
  mutable Mutex mutex_;  // leaf lock (core_internal.h)
  std::unordered_map<uint64_t, FileHandle> handles_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::fuse::detail

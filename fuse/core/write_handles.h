// WriteHandles: the files this mount is writing. CREATE (a new inode in the directory's local
// entries and an Upload for it), WRITE (sequential only, streamed into the upload), FLUSH and
// FSYNC (the upload completes: the object becomes visible whole, and the handle is done), RELEASE
// (completes what no FLUSH did, then unpins), and SETATTR's truncate of a file being written.
// The inodes are Core's (core_internal.h); the Upload (upload.h) owns the bytes.
//
// Thread-safety: every public method may be called concurrently from any thread. `mutex_` guards
// the handles; it is a leaf lock, never held while calling Core, the store, an Upload or a
// callback (the lock order is in core_internal.h).
//
// Internal to fuse/core.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/types.h"
#include "fuse/core/upload.h"

namespace reelfs::fuse::detail {

class Core;

struct WriteHandle {
  InodeId ino = 0;
  std::string key;
  std::shared_ptr<Upload> upload;
  bool finishing = false;  // Finish was called (by FLUSH, FSYNC or RELEASE)
  bool finished = false;   // ... and answered: `result` holds its outcome
  bool released = false;   // RELEASE arrived; the handle goes when the upload is finished
  Status result;
  uint32_t writer = 0;  // the process (ProcessOf) that created the file; 0: unknown
  std::vector<std::function<void(Status)>> waiting;  // FLUSH/FSYNC answers waiting for Finish
  // The writer closed it with nothing written (the upload waits for RELEASE), and no byte since.
  bool closed_empty = false;
  // AfterEmptyClose's callbacks, by id, each run once: at Finish's answer or at its timeout.
  std::vector<std::pair<uint64_t, std::function<void()>>> after_close;
};

class WriteHandles {
 public:
  explicit WriteHandles(Core& core) : core_(core) {}

  // `pid`: the calling thread (0: unknown); its process is the writer.
  void Create(InodeId parent, std::string_view name, int flags, uint32_t pid,
              Callback<FileSystem::CreatedFile> done) EXCLUDES(mutex_);
  // OPEN with O_TRUNC of existing file `ino` (FileHandles::Open checked the flags): a handle
  // writing a new object under its key, which replaces the old one when the upload completes
  // (Core::BeginOverwrite); EPERM-class without write.allow_overwrite.
  void Overwrite(InodeId ino, uint32_t pid, Callback<OpenedFile> done) EXCLUDES(mutex_);
  void Write(uint64_t fh, uint64_t offset, std::span<const std::byte> data, Callback<size_t> done)
      EXCLUDES(mutex_);
  // FLUSH and FSYNC: completes the upload (once) and answers its outcome.
  // Unless `even_empty`, a handle with nothing written is answered OK and left open. A `pid`
  // (calling thread) of another process than the writer is answered OK and completes nothing;
  // 0 always completes (FSYNC, RELEASE).
  void Complete(uint64_t fh, bool even_empty, uint32_t pid, std::function<void(Status)> done)
      EXCLUDES(mutex_);
  bool Owns(uint64_t fh) const EXCLUDES(mutex_);
  void Release(uint64_t fh) EXCLUDES(mutex_);
  // SETATTR size of inode `ino` while one of these handles writes it (Upload::Truncate); nullopt
  // when no handle writes `ino`.
  std::optional<Status> Truncate(InodeId ino, uint64_t size) EXCLUDES(mutex_);
  // A RENAME of `ino` between the writer's close of an empty file and the RELEASE that uploads
  // it: when a handle of `ino` is in that state, `then` runs once its upload has answered, or
  // after `patience` if the RELEASE has not come by then (the writer kept another descriptor; an
  // upload the RELEASE started is always waited for), and this returns true. Otherwise it
  // returns false and drops `then`. `then` runs without any lock held, on the thread that
  // finished the upload or on a timer's.
  bool AfterEmptyClose(InodeId ino, std::chrono::milliseconds patience, std::function<void()> then)
      EXCLUDES(mutex_);
  // Aborts every upload (the file system is going away): nothing half-written becomes visible.
  void AbortAll() EXCLUDES(mutex_);
  size_t size() const EXCLUDES(mutex_);
  // The upload of `fh` answered (called from its Finish callback).
  void Finished(uint64_t fh, Result<s3::ObjectInfo> r) EXCLUDES(mutex_);
  // Ends the handle's upload with `why` (aborted, nothing stored): later writes and the close
  // answer it. Also called from an Upload's write callback.
  void Fail(uint64_t fh, const Status& why) EXCLUDES(mutex_);

 private:
  // The handle for a file Core has marked as being written (`ino`, `key`): its Upload.
  uint64_t AddHandle(InodeId ino, const std::string& key, uint32_t pid) EXCLUDES(mutex_);
  // Runs AfterEmptyClose callback `id` of handle `fh` unless it already ran.
  void AfterCloseTimedOut(uint64_t fh, uint64_t id) EXCLUDES(mutex_);

  Core& core_;           // owns this part
  mutable Mutex mutex_;  // leaf lock (core_internal.h)
  std::unordered_map<uint64_t, WriteHandle> handles_ GUARDED_BY(mutex_);
  uint64_t next_after_close_ GUARDED_BY(mutex_) = 1;
};

}  // namespace reelfs::fuse::detail

// Core's files: OPEN (a handle with its Prefetcher), READ through it, the answer to a read of an
// offline object per tape.offline (EACCES, EAGAIN after a restore request, or an asynchronous,
// interruptible wait for the restore), and RELEASE.

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/mutex.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/prefetcher.h"

namespace reelfs::fuse::detail {
namespace {

// A wait for a restore that keeps finding the object offline again (the releaser race, each time
// after the Restorer saw it readable) gives up after this many rounds instead of spinning.
constexpr int kMaxRestoreWaits = 8;

constexpr std::string_view kInvalidObjectState = "InvalidObjectState";

// The answer to a read of an object that is still archived, carrying the errno the mode chose
// (EAGAIN, ETIMEDOUT): kFailedPrecondition with the S3 code, so fuse/lowlevel/errno_map.cc keeps
// the errno (it only discards errnos of network failures).
Status OfflineError(int err, std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message),
                StatusDetail{.sys_errno = err, .s3_code = std::string(kInvalidObjectState)});
}

bool IsInvalidObjectState(const Status& s) { return s.detail().s3_code == kInvalidObjectState; }

bool WantsWrite(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND | O_CREAT)) != 0;
}

}  // namespace

void Core::Open(InodeId ino, int flags, Callback<OpenedFile> done) {
  if (WantsWrite(flags)) {
    done(ErrnoToStatus(EROFS, fmt::format("open of inode {} for writing", ino)));
    return;
  }
  std::string key;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kFile, "open of", done);
    if (rec == nullptr) return;
    if (clock_.Now() < rec->attr_expiry) {
      std::string etag = rec->etag;
      uint64_t size = rec->attr.size;
      lock.unlock();
      FinishOpen(ino, etag, size, (flags & O_NONBLOCK) != 0, std::move(done));
      return;
    }
    key = rec->key;
  }
  auto self = shared_from_this();
  const bool nonblock = (flags & O_NONBLOCK) != 0;
  RefreshFile(ino, std::move(key),
              [self, ino, nonblock, done = std::move(done)](Result<InodeRecord> r) {
                if (!r.ok()) {
                  done(r.status());
                  return;
                }
                self->FinishOpen(ino, r->etag, r->attr.size, nonblock, std::move(done));
              });
}

void Core::FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                      Callback<OpenedFile> done) {
  OpenedFile opened;
  std::string key;
  bool readable = false;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "open of", done);
    if (rec == nullptr) return;
    // The kernel's page cache for this inode is still valid only if the object did not change.
    opened.keep_cache = rec->opened_before && !etag.empty() && rec->last_open_etag == etag;
    rec->opened_before = true;
    rec->last_open_etag = etag;
    readable = ReadableLocked(*rec);
    ++rec->pins;  // the handle keeps the inode (and its key) alive
    key = rec->key;
    opened.fh = next_handle_++;
    file_handles_[opened.fh] =
        FileHandle{ino, nullptr, ObjectRef{options_.bucket, key, size, etag}, nonblock};
  }
  // Created outside the lock: the prefetcher is free to touch the store from its constructor.
  std::shared_ptr<Prefetcher> prefetcher =
      CreatePrefetcher(store_, ObjectRef{options_.bucket, std::move(key), size, etag},
                       options_.prefetch, budget_, pool_, data_path_.channel);
  bool closed = false;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(opened.fh);
    if (it != file_handles_.end()) {
      it->second.prefetcher = prefetcher;
    } else {
      closed = true;  // Shutdown raced with this open
    }
  }
  if (closed) {
    prefetcher->Close();
    done(Status::Cancelled("file system shut down during open"));
    return;
  }
  // A small object is fetched whole from here, before the kernel even has the OPEN reply: the
  // READ that follows finds the GET in flight (fio/Python small-file reads: open, read, close).
  // Not when the page cache still holds the file (keep_cache: no READ will come) nor for an
  // object known to be offline (its GET would only fail; the read decides what to do).
  if (!opened.keep_cache && readable) prefetcher->Prefetch();
  done(opened);
}

void Core::Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
                std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) {
  auto op = std::make_shared<ReadOp>();
  op->ino = ino;
  op->fh = fh;
  op->offset = offset;
  op->size = size;
  op->interrupt = std::move(interrupt);
  op->done = std::move(done);
  StartRead(std::move(op));
}

void Core::StartRead(std::shared_ptr<ReadOp> op) {
  std::shared_ptr<Prefetcher> prefetcher;
  bool known_offline = false;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(op->fh);
    if (it != file_handles_.end() && it->second.ino == op->ino) prefetcher = it->second.prefetcher;
    // A state seen unreadable within state_ttl is trusted: no GET that would only fail again.
    // Older, the GET is the final word (the object may have been restored by someone else).
    if (InodeRecord* rec = inodes_.Find(op->ino); rec != nullptr && !ReadableLocked(*rec)) {
      const Clock::TimePoint seen = std::max(rec->observed, rec->offline_at);
      known_offline = clock_.Now() - seen < options_.tape.state_ttl;
    }
  }
  if (prefetcher == nullptr) {
    op->done(ErrnoToStatus(EBADF, fmt::format("file handle {} is not open", op->fh)));
    return;
  }
  if (known_offline) {
    OnOffline(std::move(op), /*from_get=*/false);
    return;
  }
  auto self = shared_from_this();
  const uint64_t offset = op->offset;
  const size_t size = op->size;
  prefetcher->Read(offset, size, [self, op = std::move(op)](Result<ReadData> r) mutable {
    if (!r.ok() && IsInvalidObjectState(r.status())) {
      self->OnOffline(std::move(op), /*from_get=*/true);
      return;
    }
    if (r.ok()) self->bytes_read_.fetch_add(r->size(), std::memory_order_relaxed);
    auto done = std::move(op->done);
    done(std::move(r));
  });
}

void Core::OnOffline(std::shared_ptr<ReadOp> op, bool from_get) {
  offline_reads_.fetch_add(1, std::memory_order_relaxed);
  ObjectRef ref;
  bool nonblock = false;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(op->fh);
    if (it == file_handles_.end()) {
      // The callback replies to the kernel and may call back into Core: never under mutex_.
      lock.unlock();
      auto done = std::move(op->done);
      done(ErrnoToStatus(EBADF, fmt::format("file handle {} is not open", op->fh)));
      return;
    }
    ref = it->second.ref;
    nonblock = it->second.nonblock;
    if (from_get) {
      if (InodeRecord* rec = inodes_.Find(op->ino); rec != nullptr) MarkOfflineLocked(rec);
    }
  }
  if (from_get && restorer_ != nullptr) restorer_->NoteOffline(ref.key);
  const OfflineMode mode = options_.tape.offline;
  auto finish = [op](Status s) {
    auto done = std::move(op->done);
    done(std::move(s));
  };
  const std::string what = fmt::format("'{}' is offline (archived)", PrintableKey(ref.key));
  if (mode == OfflineMode::kEacces || restorer_ == nullptr) {
    // Nothing is requested: the point of eacces is to protect the library from scans. An
    // O_NONBLOCK reader still gets EAGAIN, its contract in every mode.
    finish(nonblock ? OfflineError(EAGAIN, what + ", O_NONBLOCK")
                    : ErrnoToStatus(EACCES, what + " (--offline=eacces)"));
    return;
  }
  if (nonblock || mode == OfflineMode::kEagain) {
    const std::string key = ref.key;
    restorer_->Request(key, ref.etag, ref.size, [finish, what, key](Status s) {
      if (!s.ok()) {
        REELFS_LOG_WARN("fuse", "restore request for '{}' failed: {}", PrintableKey(key),
                        s.ToString());
      }
      finish(OfflineError(EAGAIN, what + ", restore requested"));
    });
    return;
  }
  WaitForRestore(std::move(op), ref.key);
}

void Core::WaitForRestore(std::shared_ptr<ReadOp> op, std::string key) {
  if (!op->deadline) op->deadline = clock_.Now() + options_.tape.offline_wait;
  if (++op->waits > kMaxRestoreWaits) {
    REELFS_LOG_WARN("fuse", "'{}' went offline again {} times right after its restore; giving up",
                    PrintableKey(key), kMaxRestoreWaits);
    auto done = std::move(op->done);
    done(ErrnoToStatus(EIO, fmt::format("'{}' keeps going offline", PrintableKey(key))));
    return;
  }
  restore_waits_.fetch_add(1, std::memory_order_relaxed);
  auto self = shared_from_this();
  // No FUSE worker waits here: the Restorer calls back when the object is readable, at the
  // deadline, or as soon as the kernel interrupts the request.
  restorer_->WaitOnline(
      key, *op->deadline, op->interrupt, [self, op, key](Result<s3::ObjectInfo> r) mutable {
        if (!r.ok()) {
          Status out;
          if (r.status().code() == StatusCode::kCancelled) {
            out = Status::Cancelled(fmt::format(
                "read of '{}' interrupted while waiting for its restore", PrintableKey(key)));
          } else if (r.status().code() == StatusCode::kDeadlineExceeded) {
            out = OfflineError(ETIMEDOUT,
                               fmt::format("'{}' did not come online within {}s", PrintableKey(key),
                                           self->options_.tape.offline_wait.count()));
          } else {
            // The errno says little; the log says why.
            REELFS_LOG_WARN("fuse", "restore of '{}' failed: {}", PrintableKey(key),
                            r.status().ToString());
            out = ErrnoToStatus(EIO, fmt::format("restore of '{}' failed: {}", PrintableKey(key),
                                                 r.status().message()));
          }
          auto done = std::move(op->done);
          done(std::move(out));
          return;
        }
        {
          MutexLock lock(self->mutex_);
          if (InodeRecord* rec = self->inodes_.Find(op->ino); rec != nullptr) {
            self->RecordObjectLocked(rec, *r, self->clock_.Now());
          }
        }
        // The failed GET may have left the stream in an error state: read through a new one.
        self->ReplacePrefetcher(op->fh);
        self->StartRead(std::move(op));
      });
}

void Core::ReplacePrefetcher(uint64_t fh) {
  ObjectRef ref;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it == file_handles_.end()) return;
    ref = it->second.ref;
  }
  std::shared_ptr<Prefetcher> fresh =
      CreatePrefetcher(store_, ref, options_.prefetch, budget_, pool_, data_path_.channel);
  std::shared_ptr<Prefetcher> old;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it != file_handles_.end()) {
      old = std::move(it->second.prefetcher);
      it->second.prefetcher = fresh;
      fresh = nullptr;
    }
  }
  if (old != nullptr) old->Close();
  if (fresh != nullptr) fresh->Close();  // released meanwhile
}

void Core::Release(uint64_t fh) {
  std::shared_ptr<Prefetcher> prefetcher;
  {
    MutexLock lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it == file_handles_.end()) return;
    prefetcher = std::move(it->second.prefetcher);
    InodeId ino = it->second.ino;
    file_handles_.erase(it);
    inodes_.Unpin(ino);
  }
  if (prefetcher != nullptr) prefetcher->Close();
}

}  // namespace reelfs::fuse::detail

// FileHandles (file_handles.h): OPEN, READ, reads of offline objects per tape.offline, RELEASE.

#include "fuse/core/file_handles.h"

#include <fcntl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/mutex.h"
#include "fuse/core/answer_check.h"
#include "fuse/core/caching_channel.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/prefetcher.h"

namespace reelfs::fuse::detail {
namespace {

// A wait for a restore that keeps finding the object offline again (the releaser race, each time
// after the Restorer saw it readable) gives up after this many rounds instead of spinning.
constexpr int kMaxRestoreWaits = 8;

// The answer to a read of an object that is still archived: kFailedPrecondition with the reason
// the mode chose (kArchived, kArchivedNoWait, kRestoreTimedOut); fuse/lowlevel/errno_map.cc makes
// the errno of it.
Status OfflineError(StatusReason reason, std::string message) {
  return Status(StatusCode::kFailedPrecondition, reason, std::move(message));
}

Status BadHandle(uint64_t fh) {
  return Status(StatusCode::kInvalidArgument, StatusReason::kBadHandle,
                fmt::format("file handle {} is not open", fh));
}

// Answers a read with an error, whichever kind it is.
void FailRead(const std::shared_ptr<ReadOp>& op, Status status) {
  if (op->to) {
    auto done = std::move(op->done_to);
    done(std::move(status));
  } else {
    auto done = std::move(op->done);
    done(std::move(status));
  }
}

bool WantsWrite(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND | O_CREAT)) != 0;
}

}  // namespace

void FileHandles::Open(InodeId ino, int flags, uint32_t pid, Callback<OpenedFile> done) {
  if (WantsWrite(flags)) {
    if (core_.options().write.read_only) return done(core_.ReadOnly("open for writing"));
    // A file being written is EBUSY; any other object is never changed in place
    // (docs/semantics.md "Writes"): new files come through CREATE, and O_TRUNC replaces the
    // object whole at close where --allow-overwrite lets it.
    Result<FileForOpen> file = core_.FileToOpen(ino);
    if (!file.ok()) return done(file.status());
    if ((flags & O_TRUNC) != 0 && (flags & O_ACCMODE) != O_RDONLY) {
      return core_.writes().Overwrite(ino, pid, std::move(done));
    }
    return done(Status(StatusCode::kPermissionDenied, StatusReason::kNotPermitted,
                       fmt::format("open '{}' for writing without O_TRUNC: objects are not "
                                   "modified or appended to through the mount; replace it "
                                   "(O_TRUNC, with --allow-overwrite) or write a new file",
                                   PrintableKey(file->key))));
  }
  const bool nonblock = (flags & O_NONBLOCK) != 0;
  Result<FileForOpen> file = core_.FileToOpen(ino);
  if (!file.ok()) {
    done(file.status());
    return;
  }
  if (file->fresh) {
    FinishOpen(ino, file->etag, file->size, nonblock, std::move(done));
    return;
  }
  auto self = core_.shared_from_this();
  core_.RefreshFile(ino, std::move(file->key),
                    [self, ino, nonblock, done = std::move(done)](Result<AttrCache> r) {
                      if (!r.ok()) {
                        done(r.status());
                        return;
                      }
                      self->files().FinishOpen(ino, r->etag, r->attr.size, nonblock,
                                               std::move(done));
                    });
}

void FileHandles::FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                             Callback<OpenedFile> done) {
  // The inode is pinned first: the handle keeps it (and its key) alive.
  Result<OpenedInode> pinned = core_.PinOpened(ino, etag);
  if (!pinned.ok()) {
    done(pinned.status());
    return;
  }
  OpenedFile opened;
  // --direct-io: every read() comes to us, so no page cache is kept (nor a READ ever skipped).
  opened.direct_io = core_.options().direct_io_reads;
  opened.keep_cache = pinned->keep_cache && !opened.direct_io;
  const bool readable = pinned->readable;
  std::string key = std::move(pinned->key);
  const MountOptions& options = core_.options();
  opened.fh = core_.NextHandle();
  const ObjectRef ref{options.bucket, key, size, etag};
  {
    MutexLock lock(mutex_);
    handles_[opened.fh] = FileHandle{ino, nullptr, ref, nonblock};
  }
  // Created outside the lock: the prefetcher is free to touch the store from its constructor.
  std::shared_ptr<Prefetcher> prefetcher = MakePrefetcher(ref);
  bool closed = false;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(opened.fh);
    if (it != handles_.end()) {
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
  // FUSE passthrough: the kernel reads the local cache's copy itself (the page cache is the
  // backing file's, so this file's own is not kept). Without it, where pipes hold a READ, the
  // daemon answers READs with that file for libfuse to splice (cached_file_reads.h). A file never
  // verified is verified on the cache's thread, never here (this may be the S3 client's thread).
  const bool backing = core_.backing_files();
  if ((backing || options.splice_cached_files) && core_.data_path().cache != nullptr &&
      core_.CachedWhole(key, etag)) {
    auto self = core_.shared_from_this();
    core_.data_path().cache->OpenWholeAsync(
        cache::CacheKey{options.bucket, key, std::string(BareEtag(etag))},
        [self, opened, prefetcher, readable, key, backing, ref,
         done = std::move(done)](Result<UniqueFd> fd) mutable {
          if (fd.ok() && !backing) {
            self->files().ServeFromFile(
                opened.fh, CreateCachedFilePrefetcher(
                               prefetcher, std::make_shared<const UniqueFd>(std::move(*fd)), ref,
                               self->cached_file_stats()));
            done(opened);
            return;
          }
          if (fd.ok()) {
            opened.backing_file = std::make_shared<const UniqueFd>(std::move(*fd));
            opened.keep_cache = false;
            opened.direct_io = false;  // the kernel reads the backing file, page cache and all
            Count(self->stats().backing_opens);
            done(opened);
            return;
          }
          // Dropped (it failed its hashes) or gone: read through the daemon, from the server.
          REELFS_LOG_DEBUG("fuse", "no backing file for '{}': {}", PrintableKey(key),
                           fd.status().ToString());
          if (!opened.keep_cache && readable) prefetcher->Prefetch();
          done(opened);
        });
    return;
  }
  // A small object is fetched whole from here, before the kernel even has the OPEN reply: the
  // READ that follows finds the GET in flight (fio/Python small-file reads: open, read, close).
  // Not when the page cache still holds the file (keep_cache: no READ will come) nor for an
  // object known to be offline (its GET would only fail; the read decides what to do).
  if (!opened.keep_cache && readable) prefetcher->Prefetch();
  done(opened);
}

void FileHandles::ServeFromFile(uint64_t fh, std::shared_ptr<Prefetcher> prefetcher) {
  MutexLock lock(mutex_);
  auto it = handles_.find(fh);
  // Gone (Shutdown raced with the open): CloseAll closed the inner prefetcher already.
  if (it != handles_.end()) it->second.prefetcher = std::move(prefetcher);
}

std::shared_ptr<rdmaio::DataChannel> FileHandles::ChannelFor(const std::string& key,
                                                             const std::string& etag) const {
  // A file the local cache holds whole is read from it through the store's CachingStore, into
  // plain buffers (the channel's CachingChannel would serve it too, one registered window at a
  // time).
  if (core_.CachedWhole(key, etag)) return nullptr;
  return core_.data_path().channel;
}

std::unique_ptr<Prefetcher> FileHandles::MakePrefetcher(const ObjectRef& ref) const {
  std::shared_ptr<rdmaio::DataChannel> channel = ChannelFor(ref.key, ref.etag);
  const DataPath& path = core_.data_path();
  PrefetchOptions prefetch = core_.options().prefetch;
  // The channel is a CachingChannel then (filesystem.h): fetches of whole blocks fill the cache.
  if (channel != nullptr && path.cache != nullptr) {
    prefetch = AlignedToCacheBlocks(prefetch, path.cache->block_size());
  }
  auto plain =
      CreatePrefetcher(core_.store(), ref, prefetch, core_.budget(), core_.pool(), channel);
  // The channel lands bytes in registered memory and the cache keeps what it reads: neither can
  // take them from a pipe.
  if (path.body_source == nullptr || channel != nullptr || path.cache != nullptr) return plain;
  return CreateSplicingPrefetcher(std::move(plain), path.body_source, ref, core_.options().splice,
                                  core_.splice_stats());
}

void FileHandles::Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
                       std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) {
  auto op = std::make_shared<ReadOp>(ino, fh, offset, size, std::move(interrupt));
  op->done = std::move(done);
  StartRead(std::move(op));
}

void FileHandles::ReadTo(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
                         FileSystem::ReadTarget target,
                         std::shared_ptr<CancellationToken> interrupt,
                         Callback<FileSystem::ReadToResult> done) {
  auto op = std::make_shared<ReadOp>(ino, fh, offset, size, std::move(interrupt));
  const bool to_window = target.window.region != nullptr;
  const bool has_sink = static_cast<bool>(target.sink);
  op->to = std::move(target);
  op->done_to = std::move(done);
  if (to_window == has_sink) {
    FailRead(op, Status::InvalidArgument("ReadTo needs exactly one of a sink and a window"));
    return;
  }
  if (to_window && core_.data_path().channel == nullptr) {
    FailRead(op, Status::FailedPrecondition("ReadTo into a window needs the mount's data channel"));
    return;
  }
  if (to_window && op->to->window.length < size) {
    FailRead(op, Status::InvalidArgument("ReadTo: the window is shorter than the read"));
    return;
  }
  StartRead(std::move(op));
}

void FileHandles::StartRead(std::shared_ptr<ReadOp> op) {
  std::shared_ptr<Prefetcher> prefetcher;
  ObjectRef ref;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(op->fh);
    if (it != handles_.end() && it->second.ino == op->ino) {
      prefetcher = it->second.prefetcher;
      if (op->to) ref = it->second.ref;
    }
  }
  // A state seen unreadable within state_ttl is trusted: no GET that would only fail again.
  // Older, the GET is the final word (the object may have been restored by someone else).
  const bool known_offline = core_.KnownOffline(op->ino);
  if (prefetcher == nullptr) {
    FailRead(op, BadHandle(op->fh));
    return;
  }
  if (known_offline) {
    OnOffline(std::move(op), /*from_get=*/false);
    return;
  }
  if (op->to) {
    StartDirect(std::move(op), std::move(ref));
    return;
  }
  auto self = core_.shared_from_this();
  const uint64_t offset = op->offset;
  const size_t size = op->size;
  prefetcher->Read(offset, size, [self, op = std::move(op)](Result<ReadData> r) mutable {
    if (!r.ok() && r.status().reason() == StatusReason::kArchived) {
      self->files().OnOffline(std::move(op), /*from_get=*/true);
      return;
    }
    if (r.ok()) Count(self->stats().bytes_read, r->size());
    auto done = std::move(op->done);
    done(std::move(r));
  });
}

void FileHandles::StartDirect(std::shared_ptr<ReadOp> op, ObjectRef ref) {
  if (op->offset >= ref.size || op->size == 0) {
    auto done = std::move(op->done_to);
    done(FileSystem::ReadToResult{});
    return;
  }
  const uint64_t length = std::min<uint64_t>(op->size, ref.size - op->offset);
  if (op->to->window.region != nullptr) {
    StartFetch(std::move(op), std::move(ref), length);
    return;
  }
  s3::GetObjectRequest req;
  req.bucket = ref.bucket;
  req.key = ref.key;
  req.range = s3::ByteRange{op->offset, length};
  req.if_match = ref.etag;  // pinned at open, as the prefetcher's parts are
  req.cancel = op->interrupt;
  // The store calls the sink in order, one chunk at a time, resuming after the bytes already
  // delivered when it retries: a running count is the position.
  auto delivered = std::make_shared<uint64_t>(0);
  req.sink = [op, delivered, length](std::span<const std::byte> chunk) -> Status {
    if (chunk.size() > length - *delivered) {
      return Status::DataLoss("GetObject returned more bytes than the range asked for");
    }
    Status s = op->to->sink(*delivered, chunk);
    if (!s.ok()) return s;
    *delivered += chunk.size();
    return Status::Ok();
  };
  auto self = core_.shared_from_this();
  self->store()->GetObject(
      req, [self, op, ref, length, delivered](Result<s3::GetObjectResult> r) mutable {
        if (!r.ok()) return self->files().FinishDirect(std::move(op), ref, length, r.status());
        self->files().FinishDirect(
            std::move(op), ref, length,
            DirectAnswer{r->info.etag, r->object_size, *delivered, rdmaio::DataPath::kHttp});
      });
}

void FileHandles::StartFetch(std::shared_ptr<ReadOp> op, ObjectRef ref, uint64_t length) {
  rdmaio::RegisteredWindow window = op->to->window;
  window.length = length;
  rdmaio::FetchRequest req{.bucket = ref.bucket,
                           .key = ref.key,
                           .object_offset = op->offset,
                           .window = std::move(window),
                           .if_match = ref.etag,  // pinned at open, as the prefetcher's parts are
                           .cancel = op->interrupt,
                           .client_writable = true};  // the side channel's client's memory
  auto self = core_.shared_from_this();
  self->data_path().channel->Fetch(
      std::move(req), [self, op, ref, length](Result<rdmaio::FetchResult> r) mutable {
        // The channel's fence has run: nothing writes into the window any more.
        if (!r.ok()) return self->files().FinishDirect(std::move(op), ref, length, r.status());
        self->files().FinishDirect(std::move(op), ref, length,
                                   DirectAnswer{r->etag, r->object_size, r->bytes, r->via});
      });
}

void FileHandles::FinishDirect(std::shared_ptr<ReadOp> op, const ObjectRef& ref, uint64_t length,
                               Result<DirectAnswer> r) {
  if (!r.ok() && r.status().reason() == StatusReason::kArchived) {
    OnOffline(std::move(op), /*from_get=*/true);
    return;
  }
  if (!r.ok()) {
    FailRead(op, std::move(r).status());
    return;
  }
  Status bad = CheckGetAnswer(ref, op->offset, length, r->etag, r->object_size, r->bytes);
  if (bad.ok() && r->bytes < length) {
    // As for a prefetcher part: the size is the handle's and the ETag pins the object, so a
    // short body is a broken answer, never a silent hole.
    bad = Status::DataLoss(fmt::format("reading {}: {} of {} bytes at offset {}",
                                       PrintableKey(ref.key), r->bytes, length, op->offset));
  }
  if (!bad.ok()) {
    FailRead(op, std::move(bad));
    return;
  }
  Count(core_.stats().bytes_read, r->bytes);
  Count(core_.stats().direct_reads);
  auto done = std::move(op->done_to);
  done(FileSystem::ReadToResult{r->bytes, r->via});
}

void FileHandles::OnOffline(std::shared_ptr<ReadOp> op, bool from_get) {
  Count(core_.stats().offline_reads);
  ObjectRef ref;
  bool nonblock = false;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(op->fh);
    if (it == handles_.end()) {
      // The callback replies to the kernel and may call back into Core: never under mutex_.
      lock.unlock();
      FailRead(op, BadHandle(op->fh));
      return;
    }
    ref = it->second.ref;
    nonblock = it->second.nonblock;
  }
  if (from_get) core_.MarkOffline(op->ino);
  hsm::Restorer* restorer = core_.restorer();
  if (from_get && restorer != nullptr) restorer->NoteOffline(ref.key);
  const OfflineMode mode = core_.options().tape.offline;
  auto finish = [op](Status s) { FailRead(op, std::move(s)); };
  const std::string what = fmt::format("'{}' is offline (archived)", PrintableKey(ref.key));
  if (mode == OfflineMode::kEacces || restorer == nullptr) {
    // Nothing is requested: the point of eacces is to protect the library from scans. An
    // O_NONBLOCK reader still gets EAGAIN, its contract in every mode.
    finish(nonblock ? OfflineError(StatusReason::kArchivedNoWait, what + ", O_NONBLOCK")
                    : OfflineError(StatusReason::kArchived, what + " (--offline=eacces)"));
    return;
  }
  if (nonblock || mode == OfflineMode::kEagain) {
    const std::string key = ref.key;
    restorer->Request(key, ref.etag, ref.size, [finish, what, key](Status s) {
      if (!s.ok()) {
        REELFS_LOG_WARN("fuse", "restore request for '{}' failed: {}", PrintableKey(key),
                        s.ToString());
      }
      finish(OfflineError(StatusReason::kArchivedNoWait, what + ", restore requested"));
    });
    return;
  }
  WaitForRestore(std::move(op), ref.key);
}

void FileHandles::WaitForRestore(std::shared_ptr<ReadOp> op, std::string key) {
  if (!op->deadline) op->deadline = core_.clock().Now() + core_.options().tape.offline_wait;
  if (++op->waits > kMaxRestoreWaits) {
    REELFS_LOG_WARN("fuse", "'{}' went offline again {} times right after its restore; giving up",
                    PrintableKey(key), kMaxRestoreWaits);
    FailRead(op, Status(StatusCode::kAborted, StatusReason::kRestoreFailed,
                        fmt::format("'{}' keeps going offline", PrintableKey(key))));
    return;
  }
  Count(core_.stats().restore_waits);
  auto self = core_.shared_from_this();
  // No FUSE worker waits here: the Restorer calls back when the object is readable, at the
  // deadline, or as soon as the kernel interrupts the request.
  core_.restorer()->WaitOnline(
      key, *op->deadline, op->interrupt, [self, op, key](Result<s3::ObjectInfo> r) mutable {
        if (!r.ok()) {
          Status out;
          if (r.status().code() == StatusCode::kCancelled) {
            out = Status::Cancelled(fmt::format(
                "read of '{}' interrupted while waiting for its restore", PrintableKey(key)));
          } else if (r.status().code() == StatusCode::kDeadlineExceeded) {
            out = OfflineError(StatusReason::kRestoreTimedOut,
                               fmt::format("'{}' did not come online within {}s", PrintableKey(key),
                                           self->options().tape.offline_wait.count()));
          } else {
            // The errno says little; the log says why.
            REELFS_LOG_WARN("fuse", "restore of '{}' failed: {}", PrintableKey(key),
                            r.status().ToString());
            out = Status(
                StatusCode::kAborted, StatusReason::kRestoreFailed,
                fmt::format("restore of '{}' failed: {}", PrintableKey(key), r.status().message()));
          }
          FailRead(op, std::move(out));
          return;
        }
        self->RecordObject(op->ino, *r);
        // The failed GET may have left the stream in an error state: read through a new one.
        self->files().ReplacePrefetcher(op->fh);
        self->files().StartRead(std::move(op));
      });
}

void FileHandles::ReplacePrefetcher(uint64_t fh) {
  ObjectRef ref;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    ref = it->second.ref;
  }
  std::shared_ptr<Prefetcher> fresh = MakePrefetcher(ref);
  std::shared_ptr<Prefetcher> old;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it != handles_.end()) {
      old = std::move(it->second.prefetcher);
      it->second.prefetcher = fresh;
      fresh = nullptr;
    }
  }
  if (old != nullptr) old->Close();
  if (fresh != nullptr) fresh->Close();  // released meanwhile
}

void FileHandles::Release(uint64_t fh) {
  std::shared_ptr<Prefetcher> prefetcher;
  InodeId ino = 0;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    prefetcher = std::move(it->second.prefetcher);
    ino = it->second.ino;
    handles_.erase(it);
  }
  core_.Unpin({ino});
  if (prefetcher != nullptr) prefetcher->Close();
}

void FileHandles::CloseAll() {
  std::vector<std::shared_ptr<Prefetcher>> prefetchers;
  {
    MutexLock lock(mutex_);
    for (auto& [fh, h] : handles_) {
      if (h.prefetcher != nullptr) prefetchers.push_back(std::move(h.prefetcher));
    }
    handles_.clear();
  }
  for (auto& p : prefetchers) p->Close();
}

size_t FileHandles::size() const {
  MutexLock lock(mutex_);
  return handles_.size();
}

}  // namespace reelfs::fuse::detail

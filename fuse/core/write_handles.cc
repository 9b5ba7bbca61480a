// WriteHandles (write_handles.h): a handle per file being written, each with its Upload.

#include "fuse/core/write_handles.h"

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/timer.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/process_identity.h"

namespace reelfs::fuse::detail {
namespace {

Status HandleNotOpen(uint64_t fh) {
  return Status(StatusCode::kInvalidArgument, StatusReason::kBadHandle,
                fmt::format("file handle {} is not open for writing", fh));
}

// The timer behind AfterEmptyClose's patience: one per process and never destroyed, because a
// callback may drop the last reference to a Core, whose destruction must not join the thread it
// runs on.
Timer& PatienceTimer() {
  static Timer* const timer = CreateRealTimer(RealClock(), "reelfs-release").release();
  return *timer;
}

void RunAll(std::vector<std::pair<uint64_t, std::function<void()>>>& callbacks) {
  for (auto& [id, fn] : callbacks) fn();
}

}  // namespace

void WriteHandles::Create(InodeId parent, std::string_view name, int flags, uint32_t pid,
                          Callback<FileSystem::CreatedFile> done) {
  std::string key;
  Result<Entry> entry = core_.CreateLocalFile(parent, name, flags, &key);
  if (!entry.ok()) return done(entry.status());
  FileSystem::CreatedFile out;
  out.file.fh = AddHandle(entry->attr.ino, key, pid);
  out.entry = std::move(*entry);
  out.file.noflush = false;  // close() must reach us: it completes the upload
  out.file.direct_io = true;
  done(std::move(out));
}

void WriteHandles::Overwrite(InodeId ino, uint32_t pid, Callback<OpenedFile> done) {
  Result<std::string> key = core_.BeginOverwrite(ino);
  if (!key.ok()) return done(key.status());
  OpenedFile out;
  out.fh = AddHandle(ino, *key, pid);
  out.noflush = false;
  out.direct_io = true;
  out.keep_cache = false;  // the old object's pages are not this file's
  done(std::move(out));
}

uint64_t WriteHandles::AddHandle(InodeId ino, const std::string& key, uint32_t pid) {
  const MountOptions& o = core_.options();
  Upload::Options uo;
  uo.part_size = o.write.part_size;
  uo.max_in_flight = o.write.max_parts_in_flight;
  WriteHandle h;
  h.ino = ino;
  h.key = key;
  // Part buffers from the mount's pool (registered with --rdma), parts through its sender.
  h.upload = Upload::Create(core_.store(), core_.budget(), o.bucket, key, uo, core_.clock(),
                            {.pool = core_.pool(), .sender = core_.part_sender()});
  h.writer = ProcessOf(pid);  // outside the lock: it reads /proc
  const uint64_t fh = core_.NextHandle();
  MutexLock lock(mutex_);
  handles_.emplace(fh, std::move(h));
  return fh;
}

void WriteHandles::Write(uint64_t fh, uint64_t offset, std::span<const std::byte> data,
                         Callback<size_t> done) {
  std::shared_ptr<Upload> upload;
  InodeId ino = 0;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) {
      lock.unlock();
      return done(HandleNotOpen(fh));
    }
    if (it->second.finishing) {
      // A handle that failed answers its failure; one whose upload completed is done (EBADF).
      Status s = it->second.finished && !it->second.result.ok()
                     ? it->second.result
                     : Status(StatusCode::kInvalidArgument, StatusReason::kBadHandle,
                              fmt::format("write to '{}' after close or fsync completed its upload",
                                          PrintableKey(it->second.key)));
      lock.unlock();
      return done(std::move(s));
    }
    upload = it->second.upload;
    ino = it->second.ino;
    if (!data.empty()) it->second.closed_empty = false;  // its writer still writes
  }
  if (offset != upload->size()) {
    // Only sequential writes can stream into an upload. The file is dropped, not stored with a
    // hole or without what the application meant to put there: its close answers this error.
    Status s = Status::InvalidArgument(
        fmt::format("write to '{}' at offset {}, but {} bytes were written: only sequential "
                    "writes are supported; the file will not be stored",
                    PrintableKey(upload->key()), offset, upload->size()));
    REELFS_LOG_WARN("fuse", "{}", s.message());
    Fail(fh, s);
    return done(std::move(s));
  }
  const size_t n = data.size();
  // The Core keeps this part alive for a callback that outlives the FileSystem.
  upload->Write(
      offset, data,
      [core = core_.shared_from_this(), upload, fh, ino, n, done = std::move(done)](Status s) {
        if (!s.ok()) {
          // The upload failed (ENOSPC, EIO, ...): the file is lost whatever comes
          // next, so the handle answers this error to later writes and the close
          // (a short write's retry must not turn it into EINVAL).
          core->writes().Fail(fh, s);
          return done(std::move(s));
        }
        Count(core->stats().bytes_written, n);
        core->SetWritingSize(ino, upload->size());
        done(n);
      });
}

void WriteHandles::Complete(uint64_t fh, bool even_empty, uint32_t pid,
                            std::function<void(Status)> done) {
  std::shared_ptr<Upload> upload;
  const uint32_t caller = ProcessOf(pid);  // outside the lock: it reads /proc
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) {
      lock.unlock();
      return done(Status::Ok());  // a read handle: nothing to flush
    }
    WriteHandle& h = it->second;
    if (h.finished) {
      Status result = h.result;
      lock.unlock();
      return done(std::move(result));
    }
    if (caller != 0 && h.writer != 0 && caller != h.writer && !h.finishing) {
      lock.unlock();
      return done(Status::Ok());  // an inherited copy closed (fork + exec): not the writer's close
    }
    if (!even_empty && !h.finishing && h.upload->size() == 0) {
      h.closed_empty = true;
      lock.unlock();
      return done(Status::Ok());  // dd's dup-and-close: the writes are still to come
    }
    h.waiting.push_back(std::move(done));
    if (h.finishing) return;
    h.finishing = true;
    upload = h.upload;
  }
  upload->Finish([core = core_.shared_from_this(), fh](Result<s3::ObjectInfo> r) {
    core->writes().Finished(fh, std::move(r));
  });
}

void WriteHandles::Finished(uint64_t fh, Result<s3::ObjectInfo> r) {
  InodeId ino = 0;
  std::string key;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    ino = it->second.ino;
    key = it->second.key;
  }
  // The inode first, so a waiting close returns only once the name shows the object.
  if (r.ok()) {
    core_.PublishFile(ino, *r);
  } else {
    REELFS_LOG_WARN("fuse", "upload of '{}' failed; nothing was stored: {}", PrintableKey(key),
                    r.status().ToString());
    core_.AbandonFile(ino);
  }
  std::vector<std::function<void(Status)>> waiting;
  std::vector<std::pair<uint64_t, std::function<void()>>> after_close;
  bool drop = false;
  Status result = r.ok() ? Status::Ok() : r.status();
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    WriteHandle& h = it->second;
    h.finished = true;
    h.result = result;
    waiting.swap(h.waiting);
    after_close.swap(h.after_close);
    drop = h.released;
    if (drop) handles_.erase(it);
  }
  if (drop) core_.UnpinInode(ino);
  for (auto& w : waiting) w(result);
  RunAll(after_close);  // a waiting rename finds the file published (or abandoned) now
}

void WriteHandles::Fail(uint64_t fh, const Status& why) {
  std::shared_ptr<Upload> upload;
  InodeId ino = 0;
  std::vector<std::pair<uint64_t, std::function<void()>>> after_close;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end() || it->second.finishing) return;
    WriteHandle& h = it->second;
    h.finishing = true;
    h.finished = true;
    h.result = why;
    upload = h.upload;
    ino = h.ino;
    after_close.swap(h.after_close);
  }
  upload->Abort();
  core_.AbandonFile(ino);
  RunAll(after_close);
}

bool WriteHandles::AfterEmptyClose(InodeId ino, std::chrono::milliseconds patience,
                                   std::function<void()> then) {
  uint64_t fh = 0;
  uint64_t id = 0;
  {
    MutexLock lock(mutex_);
    for (auto& [handle, h] : handles_) {
      // A file with bytes is complete when its writer's close returns; only an empty one waits
      // for the RELEASE (Complete). `finishing`: that upload is under way.
      if (h.ino == ino && !h.finished && (h.closed_empty || (h.finishing && h.released))) {
        fh = handle;
        id = next_after_close_++;
        h.after_close.emplace_back(id, std::move(then));
        break;
      }
    }
  }
  if (fh == 0) return false;
  // The Core may be gone when the timer fires: the callback keeps only a weak reference.
  PatienceTimer().After(patience, [weak = core_.weak_from_this(), fh, id] {
    if (std::shared_ptr<Core> core = weak.lock()) core->writes().AfterCloseTimedOut(fh, id);
  });
  return true;
}

void WriteHandles::AfterCloseTimedOut(uint64_t fh, uint64_t id) {
  std::function<void()> fn;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;  // finished: the callback ran then
    // The patience is for a RELEASE that may never come (the writer kept a descriptor). Once it
    // came, the upload's answer is certain and bounded by the S3 client's own timeouts: a slow
    // PUT (a loaded server's fsync) must not turn `touch f && mv f g` into EBUSY. Finished runs it.
    if (it->second.released && it->second.finishing) return;
    auto& list = it->second.after_close;
    for (auto w = list.begin(); w != list.end(); ++w) {
      if (w->first == id) {
        fn = std::move(w->second);
        list.erase(w);
        break;
      }
    }
  }
  if (fn) fn();
}

bool WriteHandles::Owns(uint64_t fh) const {
  MutexLock lock(mutex_);
  return handles_.contains(fh);
}

void WriteHandles::Release(uint64_t fh) {
  InodeId ino = 0;
  bool finish = false;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    WriteHandle& h = it->second;
    h.released = true;
    ino = h.ino;
    if (h.finished) {
      handles_.erase(it);
    } else {
      finish = !h.finishing;
      ino = 0;  // unpinned by Finished
    }
  }
  if (ino != 0) core_.UnpinInode(ino);
  // No FLUSH completed it (a process that never closed, an mmap writer): complete it now; the
  // outcome is only logged, RELEASE has no answer.
  if (finish) Complete(fh, /*even_empty=*/true, /*pid=*/0, [](Status) {});
}

std::optional<Status> WriteHandles::Truncate(InodeId ino, uint64_t size) {
  std::shared_ptr<Upload> upload;
  {
    MutexLock lock(mutex_);
    for (auto& [fh, h] : handles_) {
      if (h.ino == ino && !h.finishing) {
        upload = h.upload;
        break;
      }
    }
  }
  if (upload == nullptr) return std::nullopt;
  Status s = upload->Truncate(size);
  if (s.ok()) core_.SetWritingSize(ino, upload->size());
  return s;
}

void WriteHandles::AbortAll() {
  std::vector<std::pair<InodeId, std::shared_ptr<Upload>>> uploads;
  std::vector<std::pair<uint64_t, std::function<void()>>> after_close;
  {
    MutexLock lock(mutex_);
    for (auto& [fh, h] : handles_) {
      if (!h.finishing) uploads.emplace_back(h.ino, h.upload);
      for (auto& w : h.after_close) after_close.push_back(std::move(w));
      h.after_close.clear();
    }
  }
  for (auto& [ino, upload] : uploads) {
    upload->Abort();
    core_.AbandonFile(ino);
  }
  RunAll(after_close);  // the waiting renames are answered, not dropped
}

size_t WriteHandles::size() const {
  MutexLock lock(mutex_);
  return handles_.size();
}

}  // namespace reelfs::fuse::detail

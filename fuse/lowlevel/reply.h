// Reply: the one answer a FUSE request gets. Move-only in spirit, it holds the fuse_req_t until a
// reply is sent; if it is destroyed unanswered (a handler threw, a callback was dropped) the
// destructor answers EIO (fuse_reply_none for forget), logs at ERROR and asserts in debug builds.
// Error replies go through Error(), which maps the Status once (errno_map.h) and logs once: ENOENT
// at DEBUG, everything else at WARN, with the request's id, inode, file handle, offset and size.
//
// Asynchronous handlers keep the Reply in a std::shared_ptr captured by the FileSystem callback
// (std::function needs copyable callables); the exactly-once rule holds either way because the
// request pointer is taken out on the first send.
//
// InFlight counts requests not yet answered so the daemon can wait for late callbacks before it
// destroys the session they would reply on.
//
// A tracked Reply (Track) is also answered by PendingRequests (pending_requests.h): EINTR when the
// kernel interrupts the request or the mount goes down. Then the FileSystem's own answer, when
// it comes, is dropped: the request pointer is taken out atomically, so exactly one of the two
// answers is sent.
//
// Thread-safety: one Reply is completed by one thread at a time (the one that completes it,
// which may not be the one that created it), except Interrupted(), which may race with that
// completion; InFlight is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/status.h"
#include "fuse/core/types.h"
#include "fuse/lowlevel/fuse_api_internal.h"
#include "fuse/lowlevel/op_stats.h"
#include "fuse/lowlevel/pending_requests.h"

namespace reelfs::fuse {

class InFlight {
 public:
  void Begin();
  void End();
  // True when no request is left unanswered within `timeout`.
  bool WaitIdle(std::chrono::milliseconds timeout);
  uint64_t count() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  uint64_t pending_ = 0;  // guarded by mu_
};

// What log lines about one request carry. libfuse 3.14 does not expose the kernel's `unique`,
// so `id` is our own per-daemon sequence number, printed as req=N.
struct RequestInfo {
  const char* op = "";
  uint64_t id = 0;
  uint64_t ino = 0;
  uint64_t fh = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

class Reply : public std::enable_shared_from_this<Reply> {
 public:
  enum class Kind { kAnswer, kNone };  // kNone: forget/forget_multi, answered by fuse_reply_none

  // `stats` (optional) records the request's operation, time to answer and whether it failed
  // once it is answered; it must outlive the Reply.
  Reply(fuse_req_t req, RequestInfo info, InFlight* in_flight, Kind kind = Kind::kAnswer,
        OpStats* stats = nullptr);
  Reply(Reply&& other) noexcept;
  Reply& operator=(Reply&&) = delete;
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  ~Reply();

  // Registers this reply (owned by a shared_ptr) in `pending`, which must outlive it, and points
  // libfuse's interrupt function there; its answer removes it again. Not for forget (kNone).
  void Track(PendingRequests* pending);
  // Cancelled when the request is interrupted or the mount goes down (set by Track; else null):
  // for work that can stop early, such as a read waiting for a restore.
  const std::shared_ptr<CancellationToken>& cancel() const { return cancel_; }
  // Answers `why` (EINTR for kCancelled) unless an answer was sent; a later answer is dropped
  // quietly. May run concurrently with the FileSystem's completion.
  void Interrupted(const Status& why);
  // The mapped errno of `status` (never 0), logged once.
  void Error(const Status& status);
  // A refusal the adapter decides by design (kReadOnly for writes, kNotSupported for a foreign
  // xattr namespace, kBufferTooSmall): mapped by StatusToErrno like any error, but logged at
  // DEBUG only, since programs such as `ls -l` meet them on every file.
  void Refuse(const Status& status);
  void Ok();  // fuse_reply_err(0): access, release, releasedir, ...
  void None();
  // A found entry, or a negative one (ino 0, entry_timeout = negative TTL) for the kernel to cache.
  void EntryParam(const Entry& entry);
  void Attr(const Attributes& attr, std::chrono::duration<double> timeout);
  void Open(const fuse_file_info& fi);
  void Create(const Entry& entry, const fuse_file_info& fi);
  void Written(size_t count);
  void Buf(const char* data, size_t size);
  void Data(const ReadData& data);
  void StatFs(const struct statvfs& st);
  void Xattr(size_t size);

  fuse_req_t req() const { return req_.load(); }
  const RequestInfo& info() const { return info_; }
  bool answered() const { return req_.load() == nullptr; }

 private:
  // Hands out the request exactly once and marks this Reply as answered.
  fuse_req_t Take();
  // After a reply went out (rc: libfuse's result): the in-flight count and the stats.
  void Sent(int rc, bool failed);
  // Calls fuse_reply_X(req, args...) unless the request was already answered.
  template <class Fn, class... Args>
  void Send(Fn fn, fuse_req_t req, Args&&... args) {
    if (req != nullptr) Sent(fn(req, std::forward<Args>(args)...), false);
  }
  // fuse_reply_err(err) unless answered; err 0 is success.
  void SendErr(int err);

  std::atomic<fuse_req_t> req_;
  RequestInfo info_;
  InFlight* in_flight_;
  Kind kind_;
  OpStats* stats_;  // null once recorded (Sent runs on the one thread that took the request)
  std::chrono::steady_clock::time_point arrived_;
  PendingRequests* pending_ = nullptr;         // set by Track, before any answer
  std::shared_ptr<CancellationToken> cancel_;  // set by Track
  std::atomic<bool> interrupted_{false};  // an interrupt answer was attempted: a second is normal
};

// struct stat for a reply: inode, type and mode, size, owner, times (mtime for all three).
struct stat ToStat(const Attributes& attr);

}  // namespace reelfs::fuse

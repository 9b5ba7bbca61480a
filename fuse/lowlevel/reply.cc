#include "fuse/lowlevel/reply.h"

#include <cassert>
#include <cerrno>
#include <cstring>
#include <vector>

#include <sys/uio.h>

#include "common/log.h"
#include "fuse/lowlevel/errno_map.h"

namespace reelfs::fuse {
namespace {

constexpr std::string_view kSubject = "fuse";

timespec ToTimespec(std::chrono::system_clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (ts.tv_nsec < 0) {  // times before 1970 floor towards -inf
    ts.tv_nsec += 1'000'000'000;
    --ts.tv_sec;
  }
  return ts;
}

}  // namespace

void InFlight::Begin() {
  std::lock_guard<std::mutex> lock(mu_);
  ++pending_;
}

void InFlight::End() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--pending_ == 0) idle_.notify_all();
}

bool InFlight::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return pending_ == 0; });
}

uint64_t InFlight::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

struct stat ToStat(const Attributes& attr) {
  struct stat st {};
  st.st_ino = attr.ino;
  st.st_mode = attr.mode;
  st.st_nlink = attr.nlink;
  st.st_uid = attr.uid;
  st.st_gid = attr.gid;
  st.st_size = static_cast<off_t>(attr.size);
  st.st_blocks = static_cast<blkcnt_t>(attr.blocks);
  // What stat(2) users read as "the preferred I/O size": 1 MiB matches max_read, so cp and
  // friends issue reads the kernel can pass on whole.
  st.st_blksize = 1 << 20;
  st.st_mtim = ToTimespec(attr.mtime);
  st.st_ctim = st.st_mtim;  // S3 has one timestamp; atime and ctime repeat it
  st.st_atim = st.st_mtim;
  return st;
}

namespace {

// The reply of LOOKUP, MKDIR and CREATE: the inode, its attributes and how long to trust them.
fuse_entry_param ToEntryParam(const Entry& entry) {
  fuse_entry_param e{};
  e.ino = entry.attr.ino;
  e.generation = entry.generation;
  e.attr = ToStat(entry.attr);
  e.attr_timeout = entry.attr_timeout.count();
  e.entry_timeout = entry.entry_timeout.count();
  return e;
}

}  // namespace

Reply::Reply(fuse_req_t req, RequestInfo info, InFlight* in_flight, Kind kind, OpStats* stats)
    : req_(req),
      info_(info),
      in_flight_(in_flight),
      kind_(kind),
      stats_(stats),
      arrived_(stats != nullptr ? std::chrono::steady_clock::now()
                                : std::chrono::steady_clock::time_point{}) {
  if (in_flight_ != nullptr) in_flight_->Begin();
}

Reply::Reply(Reply&& other) noexcept
    : req_(other.req_.exchange(nullptr)),
      info_(other.info_),
      in_flight_(other.in_flight_),
      kind_(other.kind_),
      stats_(other.stats_),
      arrived_(other.arrived_),
      pending_(other.pending_),
      cancel_(std::move(other.cancel_)),
      interrupted_(other.interrupted_.load()) {
  other.in_flight_ = nullptr;
  other.stats_ = nullptr;
  other.pending_ = nullptr;
}

Reply::~Reply() {
  if (req_.load() == nullptr) return;
  REELFS_LOG_ERROR(kSubject, "req={} {} ino={} fh={}: no reply was sent; answering {}", info_.id,
                   info_.op, info_.ino, info_.fh, kind_ == Kind::kNone ? "none" : "EIO");
  // No assert here, unlike a double reply: the destructor also runs when a handler threw, and
  // taking the whole mount down in a debug build would hide the error it is about to report.
  if (kind_ == Kind::kNone) {
    None();
  } else {
    SendErr(StatusToErrno(Status::Internal("no reply was sent")));
  }
}

fuse_req_t Reply::Take() {
  fuse_req_t req = req_.exchange(nullptr);
  if (req == nullptr) {
    if (interrupted_.load()) {
      // The interrupt (or teardown) answer and the FileSystem's raced; one of them was sent.
      REELFS_LOG_DEBUG(kSubject, "req={} {} ino={}: answered EINTR already; reply dropped",
                       info_.id, info_.op, info_.ino);
      return nullptr;
    }
    assert(false && "a FUSE request was answered twice");
    REELFS_LOG_ERROR(kSubject, "req={} {} ino={}: second reply suppressed", info_.id, info_.op,
                     info_.ino);
    return nullptr;
  }
  // Before the answer frees `req`: an interrupt must not find it afterwards.
  if (pending_ != nullptr) pending_->Remove(req);
  return req;
}

namespace {

// libfuse's interrupt function; `data` is the PendingRequests (it outlives the session).
void OnInterrupt(fuse_req_t req, void* data) noexcept {
  static_cast<PendingRequests*>(data)->Interrupt(req);
}

}  // namespace

void Reply::Track(PendingRequests* pending) {
  fuse_req_t req = req_.load();
  if (req == nullptr || kind_ == Kind::kNone) return;
  pending_ = pending;
  cancel_ = CancellationToken::Create();
  pending->Add(req, weak_from_this(), cancel_);
  // May call OnInterrupt right here (the INTERRUPT came first); it only queues.
  fuse_req_interrupt_func(req, OnInterrupt, pending);
}

void Reply::Interrupted(const Status& why) {
  interrupted_.store(true);
  if (answered()) return;  // the FileSystem's answer went first
  Error(why);
}

void Reply::Sent(int rc, bool failed) {
  // Counted whether or not the kernel still waited: the FileSystem's work was done either way.
  if (stats_ != nullptr) {
    stats_->Record(info_.op, std::chrono::steady_clock::now() - arrived_, failed || rc != 0);
    stats_ = nullptr;
  }
  // A failed reply means the kernel no longer waits for it (interrupted, or the filesystem was
  // aborted/unmounted): nothing to do but say so at DEBUG.
  if (rc != 0) {
    REELFS_LOG_DEBUG(kSubject, "req={} {} ino={}: reply not delivered: {}", info_.id, info_.op,
                     info_.ino, std::strerror(-rc));
  }
  if (in_flight_ != nullptr) {
    InFlight* in_flight = in_flight_;
    in_flight_ = nullptr;
    in_flight->End();
  }
}

void Reply::Error(const Status& status) {
  int err = StatusToErrno(status);
  // An OK status is not an error reply; never tell the kernel "done".
  if (err == 0) err = StatusToErrno(Status::Internal("an error reply without an error"));
  // The one place a request's error is logged (docs/conventions.md "Logging and secrets").
  const LogLevel level = err == ENOENT ? LogLevel::kDebug : LogLevel::kWarn;
  REELFS_LOG(level, kSubject, "req={} {} ino={} fh={} off={} size={}: {} ({})", info_.id, info_.op,
             info_.ino, info_.fh, info_.offset, info_.size, std::strerror(err), status.ToString());
  SendErr(err);
}

void Reply::Refuse(const Status& status) {
  int err = StatusToErrno(status);
  if (err == 0) err = StatusToErrno(Status::Internal("a refusal without an error"));
  REELFS_LOG_DEBUG(kSubject, "req={} {} ino={}: {} ({})", info_.id, info_.op, info_.ino,
                   std::strerror(err), status.ToString());
  SendErr(err);
}

void Reply::Ok() { SendErr(0); }

void Reply::SendErr(int err) {
  if (fuse_req_t req = Take(); req != nullptr) Sent(fuse_reply_err(req, err), err != 0);
}

void Reply::None() {
  if (fuse_req_t req = Take(); req != nullptr) {
    fuse_reply_none(req);
    Sent(0, false);
  }
}

void Reply::EntryParam(const Entry& entry) {
  fuse_entry_param e = ToEntryParam(entry);
  Send(fuse_reply_entry, Take(), &e);
}

void Reply::Attr(const Attributes& attr, std::chrono::duration<double> timeout) {
  struct stat st = ToStat(attr);
  Send(fuse_reply_attr, Take(), &st, timeout.count());
}

void Reply::Open(const fuse_file_info& fi) { Send(fuse_reply_open, Take(), &fi); }

void Reply::Create(const Entry& entry, const fuse_file_info& fi) {
  fuse_entry_param e = ToEntryParam(entry);
  Send(fuse_reply_create, Take(), &e, &fi);
}

void Reply::Written(size_t count) { Send(fuse_reply_write, Take(), count); }

void Reply::Buf(const char* data, size_t size) { Send(fuse_reply_buf, Take(), data, size); }

void Reply::Data(const ReadData& data) {
  if (data.fd >= 0) {
    // A spliced read: libfuse splices the pipe on into /dev/fuse (FUSE_CAP_SPLICE_WRITE), or
    // reads it into memory first where splicing is off. Its own pipe is grown to the next power
    // of two above the reply plus a few pages, at least 1.33 times the reply, which holds a
    // socket's partly filled pipe slots (the mount caps READs so that this fits,
    // cli/mount_stack.cc SpliceSource).
    // (Not FUSE_BUFVEC_INIT: a C99 compound literal, which C++ compilers may refuse.)
    // A cache's file (fd_offset >= 0) is spliced from its page cache at that offset, never moved:
    // its pages must stay the file's.
    fuse_bufvec buf{};
    buf.count = 1;
    buf.buf[0].size = data.fd_bytes;
    buf.buf[0].fd = data.fd;
    if (data.fd_offset >= 0) {
      buf.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
      buf.buf[0].pos = static_cast<off_t>(data.fd_offset);
      Send(fuse_reply_data, Take(), &buf, static_cast<fuse_buf_copy_flags>(0));
      return;
    }
    buf.buf[0].flags = FUSE_BUF_IS_FD;
    Send(fuse_reply_data, Take(), &buf, FUSE_BUF_SPLICE_MOVE);
    return;
  }
  if (data.pieces.size() <= 1) {
    const char* p =
        data.pieces.empty() ? nullptr : reinterpret_cast<const char*>(data.pieces[0].data());
    Buf(p, data.pieces.empty() ? 0 : data.pieces[0].size());
    return;
  }
  // Scatter-gather straight from the prefetch buffers: no copy in user space (fuse_reply_iov
  // writes the pieces to /dev/fuse with one writev). The caller drops the keepalive after this.
  std::vector<iovec> iov;
  iov.reserve(data.pieces.size());
  for (auto piece : data.pieces) {
    iov.push_back({const_cast<std::byte*>(piece.data()), piece.size()});
  }
  Send(fuse_reply_iov, Take(), iov.data(), static_cast<int>(iov.size()));
}

void Reply::StatFs(const struct statvfs& st) { Send(fuse_reply_statfs, Take(), &st); }

void Reply::Xattr(size_t size) { Send(fuse_reply_xattr, Take(), size); }

}  // namespace reelfs::fuse

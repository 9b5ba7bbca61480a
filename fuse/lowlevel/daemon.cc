#include "fuse/lowlevel/daemon.h"

#include <fuse_log.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <utility>

#include "common/c_handle.h"
#include "common/log.h"
#include "fuse/lowlevel/fuse_api_internal.h"
#include "fuse/lowlevel/mount_tuning.h"
#include "fuse/lowlevel/ops.h"

namespace reelfs::fuse {
namespace {

constexpr std::string_view kSubject = "fuse";
// How long Run() waits after the loop ends for FileSystem callbacks still in flight (a read
// waiting on a retrying GET). Past it the session is leaked rather than freed under a callback.
constexpr std::chrono::seconds kDrainTimeout{30};

// ---- RAII over libfuse's handles ----

// fuse_args owns its argv once fuse_opt_add_arg has run; fuse_opt_free_args releases it.
class FuseArgs {
 public:
  FuseArgs() = default;
  ~FuseArgs() { fuse_opt_free_args(&args_); }
  FuseArgs(const FuseArgs&) = delete;
  FuseArgs& operator=(const FuseArgs&) = delete;
  Status Add(const std::string& arg) {
    if (fuse_opt_add_arg(&args_, arg.c_str()) != 0) return Status::ResourceExhausted("fuse args");
    return Status::Ok();
  }
  fuse_args* get() { return &args_; }

 private:
  fuse_args args_ = FUSE_ARGS_INIT(0, nullptr);
};

using LoopConfig = CHandle<fuse_loop_config, fuse_loop_cfg_destroy>;
using Session = CHandle<fuse_session, fuse_session_destroy>;
using SignalHandlers = CHandle<fuse_session, fuse_remove_signal_handlers>;
// The mounted state: unmounts on destruction (a no-op when fusermount3 -u already did).
using MountScope = CHandle<fuse_session, fuse_session_unmount>;

// libfuse's messages, routed into our facade under subject "libfuse".
void LibfuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  LogLevel ours = LogLevel::kDebug;
  if (level <= FUSE_LOG_ERR) {
    ours = LogLevel::kError;
  } else if (level == FUSE_LOG_WARNING) {
    ours = LogLevel::kWarn;
  } else if (level <= FUSE_LOG_INFO) {
    ours = LogLevel::kInfo;
  }
  if (!LogEnabled(ours, "libfuse")) return;
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0) return;
  size_t len = std::min(static_cast<size_t>(n), sizeof buf - 1);
  while (len > 0 && buf[len - 1] == '\n') --len;
  LogWrite(ours, "libfuse", std::string_view(buf, len));
}

}  // namespace

std::string EscapeFuseOptValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

struct Daemon::Impl {
  Impl(FileSystem& fs, DaemonOptions opts)
      : options(std::move(opts)), ctx(fs, TuningFor(options)) {}

  // The kernel applies INIT's max_readahead as a ceiling on the BDI window
  // (ra_pages = min(ra_pages, max_readahead)), after our read_ahead_kb write: ask for at least
  // that much, or INIT would undo it.
  static ConnTuning TuningFor(const DaemonOptions& o) {
    ConnTuning t;
    t.max_readahead = std::max<unsigned>(t.max_readahead, o.read_ahead_kb * 1024u);
    t.async_dio = o.async_dio;
    t.passthrough = o.passthrough;
    t.direct_io = o.direct_io;
    t.max_read = o.max_read;
    if (o.direct_io) {
      // A direct read of max_read bytes into a buffer that is not page-aligned (Python's
      // f.read(n), most mallocs) spans one page more; the kernel caps a request's pages at
      // max_write's (and at fs.fuse.max_pages_limit, 256 unless raised), so one more page of
      // max_write keeps such a read one READ instead of two where both allow it. Only with
      // libfuse 3.17, which sizes its /dev/fuse buffer by max_write: 3.14's stays at 1 MiB, and
      // the kernel refuses to deliver requests into a buffer below max_write (EINVAL).
#if FUSE_MAJOR_VERSION > 3 || FUSE_MINOR_VERSION >= 17
      const unsigned page = static_cast<unsigned>(sysconf(_SC_PAGESIZE));
      t.max_write = std::max(t.max_write, t.max_read + page);
#endif
      t.max_pages_limit = KernelMaxPagesLimit().value_or(0);
    }
    return t;
  }
  ~Impl() {
    if (!drained) {
      // Callbacks may still reply on the session and touch `ctx`: leaking both is the only safe
      // end (the process is about to exit anyway). The mount itself is still released.
      REELFS_LOG_ERROR(kSubject, "{} requests still unanswered at teardown; leaking the session",
                       ctx.in_flight.count());
      mount.reset();
      (void)signals.release();
      (void)session.release();
    }
  }

  DaemonOptions options;
  bool drained = true;
  // Declaration order is teardown order; do not reorder. The context is first because libfuse
  // calls destroy() (and late replies touch it) until the session is gone; then passthrough_hp's
  // acquisition order: args, loop config, session, signal handlers, mount.
  OpsContext ctx;
  FuseArgs args;
  LoopConfig loop_config;
  Session session;
  SignalHandlers signals;
  MountScope mount;
};

Result<std::unique_ptr<Daemon>> Daemon::Mount(FileSystem& fs, DaemonOptions options) {
  fuse_set_log_func(LibfuseLog);  // process-wide in libfuse; harmless to set more than once
  auto impl = std::make_unique<Impl>(fs, std::move(options));
  const DaemonOptions& o = impl->options;

  // Mount options. max_read must also be in conn->max_read (ops.cc init) or libfuse refuses.
  // Not "ro": the kernel would refuse every setxattr with EROFS before it reaches us, and
  // setfattr -n user.hsm.request is how users request restores. Every write op answers EROFS
  // itself (ops.cc), so the mount stays read-only in effect.
  // default_permissions: the kernel checks --uid/--gid/--file-mode/--dir-mode itself.
  std::string mount_opts = fmt::format("default_permissions,fsname={},subtype={},max_read={}",
                                       EscapeFuseOptValue(o.fsname), EscapeFuseOptValue(o.subtype),
                                       impl->ctx.tuning.max_read);
  if (o.allow_other) mount_opts += ",allow_other";
  REELFS_RETURN_IF_ERROR(impl->args.Add("reelfs"));
  REELFS_RETURN_IF_ERROR(impl->args.Add("-o"));
  REELFS_RETURN_IF_ERROR(impl->args.Add(mount_opts));
  if (o.fuse_debug) REELFS_RETURN_IF_ERROR(impl->args.Add("-d"));

  impl->loop_config.reset(fuse_loop_cfg_create());
  if (impl->loop_config == nullptr) return Status::ResourceExhausted("fuse_loop_cfg_create");
  fuse_loop_cfg_set_max_threads(impl->loop_config.get(), static_cast<unsigned>(o.max_threads));
  fuse_loop_cfg_set_clone_fd(impl->loop_config.get(), o.clone_fd ? 1 : 0);

  const fuse_lowlevel_ops& ops = LowLevelOps();
  impl->session.reset(fuse_session_new(impl->args.get(), &ops, sizeof ops, &impl->ctx));
  if (impl->session == nullptr) {
    return Status::InvalidArgument("fuse_session_new failed (bad mount options; see log)");
  }
  if (fuse_set_signal_handlers(impl->session.get()) != 0) {
    return Status::Internal("fuse_set_signal_handlers failed");
  }
  impl->signals.reset(impl->session.get());
  if (fuse_session_mount(impl->session.get(), o.mountpoint.c_str()) != 0) {
    return Status::FailedPrecondition(
        fmt::format("cannot mount at {} (is it an existing directory, not already mounted, and "
                    "is /dev/fuse usable?)",
                    o.mountpoint));
  }
  impl->mount.reset(impl->session.get());
  REELFS_LOG_INFO(kSubject, "mounted {} at {} (max_threads={}, clone_fd={})", o.fsname,
                  o.mountpoint, o.max_threads, o.clone_fd);

  if (o.read_ahead_kb > 0 && geteuid() == 0) {
    if (Status s = SetMountReadAheadKb(o.mountpoint, o.read_ahead_kb); !s.ok()) {
      REELFS_LOG_WARN(kSubject, "could not raise read_ahead_kb to {}: {}", o.read_ahead_kb,
                      s.ToString());
    } else {
      REELFS_LOG_INFO(kSubject, "read_ahead_kb = {}", o.read_ahead_kb);
    }
  }
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Daemon::~Daemon() = default;

const DaemonOptions& Daemon::options() const { return impl_->options; }

const OpStats& Daemon::op_stats() const { return impl_->ctx.op_stats; }

uint64_t Daemon::requests_in_flight() const { return impl_->ctx.in_flight.count(); }

Status Daemon::Run(const std::function<void()>& on_loop_end) {
  // 0: unmounted (fusermount3 -u, umount); > 0: the signal that libfuse's handler caught (it
  // stores the signal number as the session's error); < 0: -errno from /dev/fuse.
  const int rc = fuse_session_loop_mt(impl_->session.get(), impl_->loop_config.get());
  if (rc > 0) {
    REELFS_LOG_INFO(kSubject, "signal {}: unmounting {}", rc, impl_->options.mountpoint);
  } else {
    REELFS_LOG_INFO(kSubject, "loop ended (rc={}): {} unmounted", rc, impl_->options.mountpoint);
  }
  if (on_loop_end) on_loop_end();
  // Every request still unanswered is answered EINTR now, whatever the FileSystem is doing with
  // it (a listing of a server that pages for ever, a GET that retries): a caller blocked on the
  // mount must not keep the unmount waiting. Their late answers are dropped (reply.h).
  if (const size_t answered =
          impl_->ctx.pending.AnswerAll(Status::Cancelled("the mount is shutting down"));
      answered > 0) {
    REELFS_LOG_INFO(kSubject, "answered {} pending requests EINTR at unmount", answered);
  }
  // Replies still being sent (a completion that took its request just before) go to the
  // session: keep it until they are done.
  impl_->drained = impl_->ctx.in_flight.WaitIdle(kDrainTimeout);
  if (rc < 0) return ErrnoToStatus(-rc, "fuse_session_loop_mt");
  return Status::Ok();
}

}  // namespace reelfs::fuse

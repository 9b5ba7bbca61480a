// Daemon: one mounted FUSE session serving a FileSystem, with libfuse's handles owned in
// acquisition order: args, loop config, session, signal handlers, mount. Mount() returns once the
// kernel has the mount; Run() serves it on a multithreaded loop until `fusermount3 -u`/umount or
// SIGINT/SIGTERM/SIGHUP, then waits for late FileSystem callbacks; the destructor unmounts (if
// still mounted) and tears down in reverse order.
//
// This header is libfuse-free so the CLI does not see <fuse_lowlevel.h>.
//
// Thread-safety: Mount, Run and the destructor are called from one thread (main). The
// FileSystem must outlive the Daemon.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "fuse/core/filesystem.h"
#include "fuse/lowlevel/op_stats.h"

namespace reelfs::fuse {

struct DaemonOptions {
  // Absolute path of an existing directory.
  std::string mountpoint;
  // Shown in /proc/mounts and df as the source, e.g. "reelfs:bucket/prefix".
  std::string fsname;
  // The mount type is "fuse.<subtype>".
  std::string subtype = "reelfs";
  // -o allow_other: other users may access the mount (non-root needs user_allow_other in
  // /etc/fuse.conf).
  bool allow_other = false;
  // Worker threads of the FUSE loop. Handlers never block on the network, so a few suffice;
  // 16 leaves room for page-cache copies and parallel dirops. Default 16.
  int max_threads = 16;
  // One /dev/fuse fd per worker (FUSE_DEV_IOC_CLONE). Default off until measured.
  bool clone_fd = false;
  // When running as root, the mount's read_ahead_kb after mounting (0: leave the kernel's).
  // 4096 KiB = 4 x 1 MiB requests in flight per sequential reader. Default 4096.
  uint32_t read_ahead_kb = 4096;
  // libfuse's own debug output (-d): every request, to our log at DEBUG.
  bool fuse_debug = false;
  // Negotiate FUSE_CAP_ASYNC_DIO (ops.h ConnTuning::async_dio): only when no read can wait for
  // a tape restore, since the kernel waits for async O_DIRECT requests uninterruptibly.
  bool async_dio = false;
  // Ask the kernel for FUSE passthrough (docs/cache.md "Served by the kernel"): whole files in
  // the local cache read by the kernel without the daemon. Needs libfuse >= 3.16 at build time,
  // Linux >= 6.9 and CAP_SYS_ADMIN; where any is missing, the daemon serves them (logged at init).
  bool passthrough = false;
  // Largest READ the kernel sends (bytes, "-o max_read" and INIT). Spliced reads lower it to
  // what a pipe can hold twice over (docs/semantics.md "Spliced reads").
  unsigned max_read = 1u << 20;
  // `--direct-io` (files opened FOPEN_DIRECT_IO): ask for FUSE_CAP_DIRECT_IO_ALLOW_MMAP where
  // built in (libfuse >= 3.16) and offered (Linux >= 6.6), so MAP_SHARED mmap of such files
  // works; without it the kernel refuses that mmap with ENODEV (logged once at init).
  bool direct_io = false;
};

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> Mount(FileSystem& fs, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves requests until unmounted or signalled. OK for a clean exit. `on_loop_end` (optional)
  // runs when the loop has ended and before Run waits for the replies still owed: the place to
  // cancel long waits (reads waiting for a restore), so unmount does not wait for them.
  Status Run(const std::function<void()>& on_loop_end = {});

  const DaemonOptions& options() const;
  // The requests answered so far, by operation (any thread; valid while the Daemon lives).
  const OpStats& op_stats() const;
  // Requests received and not yet answered.
  uint64_t requests_in_flight() const;

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "a\,b" for "a,b": fuse_opt treats ',' as a separator and '\' as its escape.
std::string EscapeFuseOptValue(const std::string& value);

}  // namespace reelfs::fuse

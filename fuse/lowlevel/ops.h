// The libfuse low-level operations table: thin adapters that take the request's state from
// fuse_req_userdata, call the FileSystem, and answer from its callback through a Reply (reply.h),
// possibly on another thread, which the low-level API allows. Every callback is noexcept with a
// try/catch firewall, so a throw becomes EIO/ENOMEM, never a crash.
//
// The mount is read-only: every write operation answers EROFS, except setxattr of
// user.hsm.request (a restore request, docs/semantics.md "Extended attributes").
//
// Thread-safety: the table is immutable; OpsContext is shared by all loop threads and must
// outlive the session (the daemon waits on `in_flight` before destroying the session).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/cancel.h"
#include "fuse/core/filesystem.h"
#include "fuse/lowlevel/backing_files.h"
#include "fuse/lowlevel/fuse_api_internal.h"
#include "fuse/lowlevel/pending_requests.h"
#include "fuse/lowlevel/reply.h"

namespace reelfs::fuse {

// What init() negotiates with the kernel (docs/semantics.md "## Mount options"). The daemon passes
// the same max_read as "-o max_read=", which libfuse requires in both places.
struct ConnTuning {
  // 1 MiB READ/WRITE requests: the kernel's default max_pages ceiling (256 pages).
  unsigned max_read = 1u << 20;
  unsigned max_write = 1u << 20;
  // At least one full request of readahead; kernels before 7.3 only let this lower the BDI
  // window, which mount_tuning.h raises separately when running as root.
  unsigned max_readahead = 1u << 20;
  // Background requests (readahead, async direct I/O) in flight: the kernel default of 12
  // starves parallel readers (FAST'17). 128 covers 8 streams x 16 readahead chunks.
  unsigned max_background = 128;
  // 3/4 of max_background, the kernel's own ratio: above it the BDI counts as congested.
  unsigned congestion_threshold = 96;
  // FUSE_CAP_ASYNC_DIO: O_DIRECT reads above max_read go out as parallel background requests.
  // The kernel waits for those uninterruptibly, so it is off when a read may wait for a tape
  // restore (--offline=wait must answer EINTR to a signal); on for eagain and eacces mounts.
  bool async_dio = false;
  // FUSE_CAP_PASSTHROUGH where built in and offered: whole cached files read by the kernel
  // (backing_files.h). Asked for by mounts with a local cache.
  bool passthrough = false;
  // Files are opened FOPEN_DIRECT_IO (--direct-io): FUSE_CAP_DIRECT_IO_ALLOW_MMAP where built in
  // and offered, so a MAP_SHARED mmap of them works instead of failing with ENODEV.
  bool direct_io = false;
  // fs.fuse.max_pages_limit (mount_tuning.h), for what --direct-io's init line says; 0: unknown.
  unsigned max_pages_limit = 0;
};

struct OpsContext {
  explicit OpsContext(FileSystem& filesystem, ConnTuning conn_tuning = {})
      : fs(filesystem), tuning(conn_tuning) {}

  FileSystem& fs;
  const ConnTuning tuning;
  InFlight in_flight;                // requests not yet answered
  OpStats op_stats;                  // answered requests by operation (--metrics-listen)
  std::atomic<uint64_t> next_id{1};  // request ids for logs (libfuse 3.14 hides `unique`)

  // Every request not yet answered (but forgets), so that a FUSE INTERRUPT or the teardown
  // answers it EINTR (pending_requests.h). libfuse may call the interrupt function after the
  // reply was sent (it reads the function and its data before the reply clears them), so its
  // data is this long-lived table and the request is looked up in it.
  PendingRequests pending;
  BackingFiles backing;  // FUSE passthrough's backing ids by file handle
};

// The operations; the userdata passed to fuse_session_new must be an OpsContext*.
const fuse_lowlevel_ops& LowLevelOps();

}  // namespace reelfs::fuse

// BackingFiles: FUSE passthrough in the adapter (docs/cache.md "Served by the kernel"). Where
// libfuse >= 3.16 is built in (REELFS_FUSE_PASSTHROUGH) and the kernel grants FUSE_CAP_PASSTHROUGH
// at init, an open the FileSystem answered with a backing file (the local cache's copy of the
// whole object) is registered with the kernel (fuse_passthrough_open) and its id put in the OPEN
// reply; the kernel then reads that file itself and sends no READ for the handle. The id is
// released at the handle's RELEASE (the kernel takes its own reference at open, after our reply,
// so it cannot be released sooner).
//
// A registration the kernel refuses (the daemon lacks CAP_SYS_ADMIN, the backing file is on a
// stacked file system) turns passthrough off for the mount with one warning: the daemon serves
// those reads from the cache itself, as on a build without passthrough.
//
// Thread-safety: all methods may be called from any loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "fuse/lowlevel/fuse_api_internal.h"

namespace reelfs::fuse {

class FileSystem;

class BackingFiles {
 public:
  // Whether this build can do passthrough at all (libfuse >= 3.16).
  static constexpr bool kBuiltIn =
#ifdef REELFS_FUSE_PASSTHROUGH
      true;
#else
      false;
#endif

  // At init: asks the kernel for passthrough when `wanted`; tells `fs` whether to hand out
  // backing files. Logs the outcome once.
  void Negotiate(fuse_conn_info* conn, bool wanted, FileSystem& fs);
  // Registers `fd` for the open being answered (`req`, before the reply) and records it under
  // `fh`; the backing id for fuse_file_info::backing_id, or 0 (then reads come to the daemon).
  int32_t Open(fuse_req_t req, uint64_t fh, int fd, FileSystem& fs);
  // At RELEASE of `fh`: releases its backing id, if it had one.
  void Release(fuse_req_t req, uint64_t fh);

 private:
  std::atomic<bool> on_{false};
  Mutex mutex_;
  std::unordered_map<uint64_t, int32_t> ids_ GUARDED_BY(mutex_);  // fh -> backing id
};

}  // namespace reelfs::fuse

// BackingFiles (backing_files.h).

#include "fuse/lowlevel/backing_files.h"

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "fuse/core/filesystem.h"

namespace reelfs::fuse {
namespace {

constexpr const char* kSubject = "fuse";

}  // namespace

void BackingFiles::Negotiate(fuse_conn_info* conn, bool wanted, FileSystem& fs) {
  (void)conn;
  if (!wanted) return;
#ifdef REELFS_FUSE_PASSTHROUGH
  // The cache's files are on a plain file system (never a stacked one): the default stacking
  // depth (backing files stacked under nothing) is what the kernel needs. Through the 32-bit
  // `want` like every other flag of ours: libfuse 3.17 refuses a mix of `want` and
  // fuse_set_feature_flag's `want_ext` ("both 'want' and 'want_ext' are set").
  if ((conn->capable & FUSE_CAP_PASSTHROUGH) != 0) {
    conn->want |= FUSE_CAP_PASSTHROUGH;
    on_.store(true);
    fs.SetBackingFiles(true);
    REELFS_LOG_INFO(kSubject, "passthrough: on (the kernel reads whole cached files itself)");
  } else {
    REELFS_LOG_INFO(kSubject,
                    "passthrough: off (the kernel does not offer FUSE passthrough; Linux >= 6.9 "
                    "does); cached files are served by the daemon");
  }
#else
  (void)fs;
  REELFS_LOG_INFO(kSubject,
                  "passthrough: off (built with libfuse {}.{}, which has no passthrough; 3.16+ "
                  "does); cached files are served by the daemon",
                  FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION);
#endif
}

int32_t BackingFiles::Open(fuse_req_t req, uint64_t fh, int fd, FileSystem& fs) {
  if (!on_.load(std::memory_order_relaxed)) return 0;
#ifdef REELFS_FUSE_PASSTHROUGH
  errno = 0;
  const int id = fuse_passthrough_open(req, fd);
  if (id <= 0) {
    const int err = errno;
    if (on_.exchange(false)) {
      fs.SetBackingFiles(false);
      REELFS_LOG_WARN(kSubject,
                      "passthrough: the kernel refused a backing file ({}); it needs "
                      "CAP_SYS_ADMIN and a cache on a plain file system. Turned off for this "
                      "mount: cached files are served by the daemon",
                      err != 0 ? std::strerror(err) : "no reason given");
    }
    return 0;
  }
  MutexLock lock(mutex_);
  ids_[fh] = id;
  return id;
#else
  (void)req;
  (void)fh;
  (void)fd;
  (void)fs;
  return 0;
#endif
}

void BackingFiles::Release(fuse_req_t req, uint64_t fh) {
#ifdef REELFS_FUSE_PASSTHROUGH
  int32_t id = 0;
  {
    MutexLock lock(mutex_);
    auto it = ids_.find(fh);
    if (it == ids_.end()) return;
    id = it->second;
    ids_.erase(it);
  }
  if (fuse_passthrough_close(req, id) < 0) {
    REELFS_LOG_DEBUG(kSubject, "passthrough: closing backing id {}: {}", id, std::strerror(errno));
  }
#else
  (void)req;
  (void)fh;
#endif
}

}  // namespace reelfs::fuse

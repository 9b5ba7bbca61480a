#include "gateway/root_lock.h"

#include <fcntl.h>

#include <cerrno>

#include <sys/file.h>

namespace reelfs::gateway {

Result<RootLock> RootLock::Acquire(const std::string& internal_dir) {
  const std::string path = internal_dir + "/lock";
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return Status::FailedPrecondition("another reelfs-gateway holds this root (lock file " +
                                        path + "); stop it first");
    }
    return ErrnoToStatus(errno, "lock " + path);
  }
  return RootLock(std::move(fd));
}

}  // namespace reelfs::gateway

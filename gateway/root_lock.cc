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

bool RootLock::HeldByAnother(const std::string& internal_dir) {
  const std::string path = internal_dir + "/lock";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  // A shared lock conflicts only with the owner's exclusive one; dropped with the fd.
  return ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

}  // namespace reelfs::gateway

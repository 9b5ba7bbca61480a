#include "common/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace reelfs {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) Reset(other.Release());
  return *this;
}

Result<UniqueFd> UniqueFd::Open(const std::string& path, int flags, int mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoToStatus(errno, "open " + path);
  return UniqueFd(fd);
}

int UniqueFd::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    int err = errno;
    REELFS_LOG_ERROR("common", "close(fd {}) failed: {}", fd_, std::strerror(err));
  }
  fd_ = fd;
}

}  // namespace reelfs

#include "common/pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/status.h"

namespace reelfs {

Result<Pipe> OpenPipe(size_t want) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
  Pipe p;
  p.read_end.Reset(fds[0]);
  p.write_end.Reset(fds[1]);
  // Over pipe-max-size or the user's pipe pages F_SETPIPE_SZ fails: the size it has is what it
  // holds.
  int got = ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(want));
  if (got < 0) got = ::fcntl(fds[1], F_GETPIPE_SZ);
  if (got < 0) return ErrnoToStatus(errno, "F_GETPIPE_SZ");
  p.capacity = static_cast<size_t>(got);
  return p;
}

size_t LargestPipeCapacity(size_t floor, size_t ceiling) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return floor;
  const UniqueFd read_end(fds[0]);
  const UniqueFd write_end(fds[1]);
  for (size_t size = ceiling; size >= floor && size > 0; size /= 2) {
    const int got = ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(size));
    if (got >= 0) return static_cast<size_t>(got);
  }
  return floor;
}

}  // namespace reelfs

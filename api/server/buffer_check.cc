#include "api/server/buffer_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <linux/dma-buf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/status.h"

namespace reelfs::api {

Result<MountFile> CheckMountFd(int fd, dev_t mount_dev) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return ErrnoToStatus(errno, "OPEN_FILE: fstat");
  if (st.st_dev != mount_dev) {
    return Status::PermissionDenied("OPEN_FILE: the fd is not a file of this mount");
  }
  if (!S_ISREG(st.st_mode)) return Status::PermissionDenied("OPEN_FILE: not a regular file");
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return ErrnoToStatus(errno, "OPEN_FILE: F_GETFL");
  return MountFile{static_cast<fuse::InodeId>(st.st_ino), (flags & O_NONBLOCK) != 0};
}

MappedBuffer::~MappedBuffer() { munmap(data_, size_); }

Result<std::unique_ptr<MappedBuffer>> MapSealedMemfd(int fd, uint64_t length) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return Status::InvalidArgument("REGISTER_BUFFER: not a memfd");
  if ((seals & F_SEAL_SHRINK) == 0 || (seals & F_SEAL_GROW) == 0) {
    return Status::InvalidArgument("REGISTER_BUFFER: memfd not sealed (F_SEAL_SHRINK|F_SEAL_GROW)");
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (length == 0 || length % page != 0) {
    return Status::InvalidArgument(
        fmt::format("REGISTER_BUFFER: length {} is not a non-zero multiple of {}", length, page));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return ErrnoToStatus(errno, "REGISTER_BUFFER: fstat");
  if (static_cast<uint64_t>(st.st_size) < length) {
    return Status::InvalidArgument(
        fmt::format("REGISTER_BUFFER: memfd of {} bytes, {} declared", st.st_size, length));
  }
  void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return ErrnoToStatus(errno, "REGISTER_BUFFER: mmap");
  return std::make_unique<MappedBuffer>(static_cast<std::byte*>(data), length);
}

Result<DmaBufInfo> CheckDmaBuf(int fd, uint64_t length) {
  // A dma-buf is an anonymous file of the dma-buf pseudo filesystem; what says so without
  // trusting its name is the fdinfo the dma-buf core adds ("exp_name:" and "size:").
  DmaBufInfo info;
  {
    std::ifstream fdinfo(fmt::format("/proc/self/fdinfo/{}", fd));
    if (!fdinfo) return ErrnoToStatus(EBADF, "REGISTER_BUFFER: fdinfo");
    std::string line;
    while (std::getline(fdinfo, line)) {
      if (line.starts_with("exp_name:")) {
        const size_t at = line.find_first_not_of(" \t", sizeof "exp_name:" - 1);
        info.exporter = at == std::string::npos ? "?" : line.substr(at);
      }
    }
  }
  if (info.exporter.empty()) return Status::InvalidArgument("REGISTER_BUFFER: not a dma-buf");
  // A dma-buf's size is fixed at export; lseek to the end reports it.
  const off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0) return ErrnoToStatus(errno, "REGISTER_BUFFER: lseek on the dma-buf");
  info.size = static_cast<uint64_t>(end);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (length == 0 || length % page != 0) {
    return Status::InvalidArgument(
        fmt::format("REGISTER_BUFFER: length {} is not a non-zero multiple of {}", length, page));
  }
  if (info.size < length) {
    return Status::InvalidArgument(
        fmt::format("REGISTER_BUFFER: dma-buf of {} bytes, {} declared", info.size, length));
  }
  return info;
}

Result<std::unique_ptr<MappedBuffer>> MapDmaBuf(int fd, uint64_t length) {
  void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    return Status(StatusCode::kUnimplemented,
                  fmt::format("mmap of the dma-buf: {}", std::strerror(err)),
                  StatusDetail{.sys_errno = err});
  }
  return std::make_unique<MappedBuffer>(static_cast<std::byte*>(data), length);
}

Status SyncDmaBufForCpuWrite(int fd, bool start) {
  dma_buf_sync sync{};
  sync.flags = DMA_BUF_SYNC_WRITE | (start ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END);
  for (;;) {
    if (ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) == 0) return Status::Ok();
    if (errno != EINTR && errno != EAGAIN) return ErrnoToStatus(errno, "DMA_BUF_IOCTL_SYNC");
  }
}

}  // namespace reelfs::api

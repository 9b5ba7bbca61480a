// The side channel's checks on what a client passes (docs/protocols/side-channel.md sections 3
// and 4): an fd must name a regular file of the mount, a host buffer must be a memfd sealed
// against shrinking and growing (without F_SEAL_SHRINK a client could truncate it under the
// daemon's mapping and turn the daemon's next write into SIGBUS), and a dma-buf must be one (a
// dma-buf cannot change size, so it needs no seals).
//
// Thread-safety: pure functions over the fds they are given; a MappedBuffer is owned by one
// thread at a time and may be destroyed from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <sys/types.h>

#include "common/result.h"
#include "fuse/core/types.h"

namespace reelfs::api {

struct MountFile {
  fuse::InodeId ino = 0;  // st_ino: the mount's inode number (fuse/lowlevel sets st_ino = ino)
  bool nonblock = false;  // opened O_NONBLOCK: reads of an offline object answer EAGAIN
};

// kPermissionDenied unless `fd` is a regular file on device `mount_dev`.
Result<MountFile> CheckMountFd(int fd, dev_t mount_dev);

// A shared, writable mapping of a client's memfd; unmapped when destroyed.
class MappedBuffer {
 public:
  MappedBuffer(std::byte* data, size_t size) : data_(data), size_(size) {}
  ~MappedBuffer();
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  std::byte* data_;
  size_t size_;
};

// kInvalidArgument for anything but a memfd with F_SEAL_SHRINK and F_SEAL_GROW whose size is at
// least `length`, a non-zero multiple of the page size.
Result<std::unique_ptr<MappedBuffer>> MapSealedMemfd(int fd, uint64_t length);

struct DmaBufInfo {
  std::string exporter;  // fdinfo's exp_name: "nvidia", "vgem", "udmabuf", ...
  uint64_t size = 0;
};

// kInvalidArgument unless `fd` is a dma-buf (its /proc/self/fdinfo names an exporter) of at
// least `length` bytes, `length` a non-zero multiple of the page size.
Result<DmaBufInfo> CheckDmaBuf(int fd, uint64_t length);

// A shared, writable CPU mapping of a checked dma-buf. kUnimplemented when its exporter does
// not map into user space (GPU exporters do not); the errno is kept.
Result<std::unique_ptr<MappedBuffer>> MapDmaBuf(int fd, uint64_t length);

// DMA_BUF_IOCTL_SYNC around the CPU's writes into a mapped dma-buf, so the exporter can flush or
// invalidate caches: `start` before the first write of a READ, then !start after the last.
[[nodiscard]] Status SyncDmaBufForCpuWrite(int fd, bool start);

}  // namespace reelfs::api

#include "api/client/memfd_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <sys/mman.h>

#include "common/status.h"

namespace reelfs::api {

Result<MemfdBuffer> MemfdBuffer::Create(size_t length) {
  if (length == 0) return Status::InvalidArgument("memfd buffer: length 0");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (length > SIZE_MAX - page) return Status::InvalidArgument("memfd buffer: length too large");
  const size_t size = (length + page - 1) / page * page;
  UniqueFd fd(memfd_create("reelfs-side-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoToStatus(errno, "memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return ErrnoToStatus(errno, "ftruncate");
  // F_SEAL_SEAL too: nobody can later loosen what the daemon relies on.
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return ErrnoToStatus(errno, "memfd seals");
  }
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED) return ErrnoToStatus(errno, "mmap memfd");
  return MemfdBuffer(std::move(fd), static_cast<std::byte*>(data), size);
}

MemfdBuffer::~MemfdBuffer() { Unmap(); }

MemfdBuffer::MemfdBuffer(MemfdBuffer&& other) noexcept
    : fd_(std::move(other.fd_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MemfdBuffer& MemfdBuffer::operator=(MemfdBuffer&& other) noexcept {
  if (this != &other) {
    Unmap();
    fd_ = std::move(other.fd_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MemfdBuffer::Unmap() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace reelfs::api

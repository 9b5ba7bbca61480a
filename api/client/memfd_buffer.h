// MemfdBuffer: a client's host buffer for the side channel (docs/protocols/side-channel.md
// section 4): a memfd of a page-aligned length, sealed against shrinking and growing (so the
// daemon's mapping can never turn into SIGBUS), mapped shared here. The daemon maps the same pages
// and writes READ bytes into them.
//
// Thread-safety: move-only value; bytes() may be read from any thread once the DONE of the READ
// that filled them has been seen.
#pragma once

#include <cstddef>
#include <span>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::api {

class MemfdBuffer {
 public:
  // At least `length` bytes (rounded up to the page size), zero-filled, sealed.
  static Result<MemfdBuffer> Create(size_t length);
  MemfdBuffer() = default;
  ~MemfdBuffer();
  MemfdBuffer(MemfdBuffer&& other) noexcept;
  MemfdBuffer& operator=(MemfdBuffer&& other) noexcept;
  MemfdBuffer(const MemfdBuffer&) = delete;
  MemfdBuffer& operator=(const MemfdBuffer&) = delete;

  int fd() const { return fd_.get(); }
  size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  MemfdBuffer(UniqueFd fd, std::byte* data, size_t size)
      : fd_(std::move(fd)), data_(data), size_(size) {}
  void Unmap();

  // Teardown: the mapping first, then the fd (either alone keeps the pages alive).
  UniqueFd fd_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace reelfs::api

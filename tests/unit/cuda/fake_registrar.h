// A MemoryRegistrar for cuda/'s tests: answers each kind of memory as told, records what it was
// asked, and whether a dma-buf fd was still open when it was registered.
//
// Thread-safety: none; one test thread.
#pragma once

#include <fcntl.h>

#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "common/result.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::cuda::testing {

class FakeRegion : public rdmaio::RegisteredRegion {
 public:
  FakeRegion(rdmaio::MemoryKind kind, uint64_t length) : kind_(kind), length_(length) {}
  rdmaio::MemoryKind kind() const override { return kind_; }
  uint64_t length() const override { return length_; }
  std::span<std::byte> host_bytes() const override { return {}; }

 private:
  rdmaio::MemoryKind kind_;
  uint64_t length_;
};

// Answers each kind as told; records what it was asked and whether a dma-buf fd was open then.
class FakeRegistrar : public rdmaio::MemoryRegistrar {
 public:
  Status host_answer, dma_buf_answer, device_answer;
  std::vector<rdmaio::MemorySource> seen;
  bool dma_buf_fd_was_open = false;

  Result<std::shared_ptr<rdmaio::RegisteredRegion>> Register(
      const rdmaio::MemorySource& source) override {
    seen.push_back(source);
    if (const auto* host = std::get_if<rdmaio::HostMemory>(&source)) {
      if (!host_answer.ok()) return host_answer;
      return Region(rdmaio::MemoryKind::kHost, host->bytes.size());
    }
    if (const auto* dmabuf = std::get_if<rdmaio::DmaBufMemory>(&source)) {
      dma_buf_fd_was_open = fcntl(dmabuf->fd, F_GETFD) != -1;
      if (!dma_buf_answer.ok()) return dma_buf_answer;
      return Region(rdmaio::MemoryKind::kDmaBuf, dmabuf->length);
    }
    const auto& device = std::get<rdmaio::DeviceMemory>(source);
    if (!device_answer.ok()) return device_answer;
    return Region(rdmaio::MemoryKind::kDevice, device.length);
  }

 private:
  static Result<std::shared_ptr<rdmaio::RegisteredRegion>> Region(rdmaio::MemoryKind kind,
                                                                  uint64_t length) {
    return std::shared_ptr<rdmaio::RegisteredRegion>(std::make_shared<FakeRegion>(kind, length));
  }
};

}  // namespace reelfs::cuda::testing

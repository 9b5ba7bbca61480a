// RegisteredRegion / MemoryRegistrar: memory a DataChannel's remote peer may write into.
//
// RDMA can only land bytes in memory registered with the NIC. Registration is slow (pins pages,
// builds translation tables), so it happens once per large region (a buffer pool's arena, an
// application's GPU tensor), and requests then use windows inside a region.
//
// One registrar interface takes every kind of memory, so host and GPU memory plug into the same
// call (the GPU side is cuda/, docs/gpu.md):
//   * HostMemory: a page-aligned span of our address space (ibv_reg_mr);
//   * DmaBufMemory: a dma-buf fd with offset/length, e.g. CUDA device memory exported with
//     cuMemGetHandleForAddressRange (ibv_reg_dmabuf_mr). rdmaio never includes CUDA: cuda/ exports
//     the fd and calls Register;
//   * DeviceMemory: a GPU virtual address range handed to ibv_reg_mr as is, which works only
//     where a peer-memory client (nvidia-peermem) takes such ranges; again no CUDA here.
// A registrar that cannot register a kind says kUnimplemented, and the caller steps down the
// buffer ladder (cuda/gpu_ladder.h: dma-buf GPU -> peermem GPU -> host staging -> plain reads).
//
// Thread-safety: Register may be called from any thread. A RegisteredRegion is immutable after
// creation; destroying it deregisters, and must not happen while a fetch into it is in flight
// (FetchRequest holds a shared_ptr so the usual lifetime takes care of that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <variant>

#include "common/result.h"

namespace reelfs::rdmaio {

struct HostMemory {
  std::span<std::byte> bytes;  // page-aligned start and length; must outlive the region
};

struct DmaBufMemory {
  int fd = -1;          // borrowed: the caller keeps ownership (and may close it after Register)
  uint64_t offset = 0;  // into the dma-buf, page-aligned
  uint64_t length = 0;  // page-aligned
  uint64_t iova = 0;    // the address the peer writes to (the device VA, so tokens name it)
};

struct DeviceMemory {
  uint64_t address = 0;  // the device VA (cudaMalloc'd); the peer writes to it
  uint64_t length = 0;   // nvidia-peermem pins the 64 KiB GPU pages that hold the range
};

using MemorySource = std::variant<HostMemory, DmaBufMemory, DeviceMemory>;

enum class MemoryKind : uint8_t { kHost, kDmaBuf, kDevice };

class RegisteredRegion {
 public:
  virtual ~RegisteredRegion() = default;  // deregisters
  virtual MemoryKind kind() const = 0;
  virtual uint64_t length() const = 0;
  // The bytes as seen by this process; empty for device memory (not CPU-addressable here).
  virtual std::span<std::byte> host_bytes() const = 0;
};

class MemoryRegistrar {
 public:
  virtual ~MemoryRegistrar() = default;
  // kInvalidArgument for misaligned or empty memory, kUnimplemented for a kind this registrar
  // cannot register, kResourceExhausted when the memlock limit or the NIC's tables are full.
  virtual Result<std::shared_ptr<RegisteredRegion>> Register(const MemorySource& source) = 0;
};

}  // namespace reelfs::rdmaio

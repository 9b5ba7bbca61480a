// VerbsRegistrar: rdmaio's MemoryRegistrar over ibv_reg_mr / ibv_reg_dmabuf_mr, plus registered
// host memory that a buffer pool can hand out in pieces.
//
// Registration pins pages and fills the NIC's translation tables, so it is done once per large
// arena, never per read (registered_memory.h). RegisteredSlabPool carves an arena into equal slots;
// fuse's BufferPool can later allocate from it by wrapping a RegisteredSlice (its bytes() is the
// Buffer's span), and the same bytes can then be filled by curl or by the server's RDMA WRITE.
//
// Arenas prefer 2 MiB hugepages (MAP_HUGETLB, fewer translation entries for the NIC and fewer
// page faults); without reserved hugepages they fall back to anonymous memory aligned to 2 MiB with
// MADV_HUGEPAGE, so transparent hugepages can still back them.
//
// Thread-safety: Register, AllocateArena and RegisteredSlabPool::Allocate may be called from any
// thread. Regions and slices are immutable; destroying one deregisters or returns it (any thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "rdmaio/registered_memory.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/handles.h"

namespace reelfs::rdmaio::verbs {

// Remote write and read, local write: the peer writes GET data and reads PUT data.
inline constexpr int kRegionAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

class VerbsRegion : public RegisteredRegion {
 public:
  VerbsRegion(std::shared_ptr<ProtectionDomain> pd, MrHandle mr, MemoryKind kind,
              std::span<std::byte> host_bytes, std::shared_ptr<void> backing)
      : pd_(std::move(pd)),
        backing_(std::move(backing)),
        mr_(std::move(mr)),
        kind_(kind),
        host_bytes_(host_bytes) {}

  MemoryKind kind() const override { return kind_; }
  uint64_t length() const override { return mr_->length; }
  std::span<std::byte> host_bytes() const override { return host_bytes_; }

  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  // The address the peer names in its work requests (the host VA, or the dma-buf iova).
  uint64_t remote_addr() const { return reinterpret_cast<uint64_t>(mr_->addr); }
  ibv_pd* pd() const { return pd_->pd(); }

 private:
  // Declared in acquisition order: the MR is deregistered first, then the memory it pinned is
  // freed, then the PD is released.
  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<void> backing_;  // owns the memory when an arena allocated it; else empty
  MrHandle mr_;
  MemoryKind kind_;
  std::span<std::byte> host_bytes_;
};

class VerbsRegistrar : public MemoryRegistrar {
 public:
  explicit VerbsRegistrar(std::shared_ptr<ProtectionDomain> pd) : pd_(std::move(pd)) {}

  // HostMemory: page-aligned start and length. DmaBufMemory: ibv_reg_dmabuf_mr (kUnimplemented
  // when the device or kernel cannot). DeviceMemory: ibv_reg_mr on the GPU VA (kUnimplemented
  // when no peer-memory client takes it). The region is a VerbsRegion.
  Result<std::shared_ptr<RegisteredRegion>> Register(const MemorySource& source) override;

  // `length` bytes of fresh host memory (rounded up to whole pages), registered.
  Result<std::shared_ptr<VerbsRegion>> AllocateArena(size_t length);

  const std::shared_ptr<ProtectionDomain>& pd() const { return pd_; }

 private:
  Result<std::shared_ptr<RegisteredRegion>> RegisterDevice(const DeviceMemory& device);

  std::shared_ptr<ProtectionDomain> pd_;
};

// One slot of a RegisteredSlabPool. Returns the slot when destroyed.
class RegisteredSlice {
 public:
  virtual ~RegisteredSlice() = default;
  virtual std::span<std::byte> bytes() = 0;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
  virtual uint64_t remote_addr() const = 0;  // of bytes().data()
};

// Equal, page-aligned slots of one registered arena.
class RegisteredSlabPool : public std::enable_shared_from_this<RegisteredSlabPool> {
 public:
  static Result<std::shared_ptr<RegisteredSlabPool>> Create(VerbsRegistrar& registrar,
                                                            size_t slot_size, size_t slots);
  // A free slot if `size` fits one; kInvalidArgument if it never can, kResourceExhausted when
  // all slots are in use.
  Result<std::unique_ptr<RegisteredSlice>> Allocate(size_t size);
  size_t slot_size() const { return slot_size_; }
  const std::shared_ptr<VerbsRegion>& region() const { return region_; }

 private:
  class Slice;
  RegisteredSlabPool(std::shared_ptr<VerbsRegion> region, size_t slot_size, size_t slots);
  void Return(size_t slot);

  std::shared_ptr<VerbsRegion> region_;
  size_t slot_size_;
  Mutex mutex_;  // leaf lock
  std::vector<size_t> free_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::rdmaio::verbs

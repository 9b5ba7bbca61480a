#include "rdmaio/verbs/registrar.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include <fmt/format.h>
#include <sys/mman.h>

#include "common/units.h"
#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Anonymous memory of `length` bytes that munmaps itself. Hugepage-backed when the kernel has
// reserved 2 MiB pages (MAP_HUGETLB fails cleanly otherwise); else 2 MiB-aligned with
// MADV_HUGEPAGE, over-mapping and trimming to reach the alignment.
Result<std::shared_ptr<void>> MapArena(size_t length) {
  auto unmapper = [length](void* p) { munmap(p, length); };
  if (length % kHugePage == 0) {
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) return std::shared_ptr<void>(p, unmapper);
  }
  const size_t over = length + kHugePage;
  void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return VerbsErrno(errno, fmt::format("mmap({} bytes)", over));
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = AlignUp(base, kHugePage);
  if (aligned > base) munmap(raw, aligned - base);
  const uintptr_t end = aligned + length;
  if (base + over > end) munmap(reinterpret_cast<void*>(end), base + over - end);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, length, MADV_HUGEPAGE);  // a hint: failure only costs page faults
  return std::shared_ptr<void>(p, unmapper);
}

Result<std::shared_ptr<VerbsRegion>> RegisterHost(const std::shared_ptr<ProtectionDomain>& pd,
                                                  std::span<std::byte> bytes,
                                                  std::shared_ptr<void> backing) {
  const size_t page = PageSize();
  if (bytes.empty() || reinterpret_cast<uintptr_t>(bytes.data()) % page != 0 ||
      bytes.size() % page != 0) {
    return Status::InvalidArgument(
        fmt::format("host memory to register must be non-empty and page-aligned ({} bytes at {})",
                    bytes.size(), static_cast<void*>(bytes.data())));
  }
  MrHandle mr(ibv_reg_mr(pd->pd(), bytes.data(), bytes.size(), kRegionAccess));
  if (!mr) {
    return VerbsErrno(errno, fmt::format("ibv_reg_mr({} bytes at {})", bytes.size(),
                                         static_cast<void*>(bytes.data())));
  }
  return std::make_shared<VerbsRegion>(pd, std::move(mr), MemoryKind::kHost, bytes,
                                       std::move(backing));
}

}  // namespace

Result<std::shared_ptr<RegisteredRegion>> VerbsRegistrar::Register(const MemorySource& source) {
  if (const auto* host = std::get_if<HostMemory>(&source)) {
    REELFS_ASSIGN_OR_RETURN(auto region, RegisterHost(pd_, host->bytes, nullptr));
    return std::shared_ptr<RegisteredRegion>(std::move(region));
  }
  if (const auto* device = std::get_if<DeviceMemory>(&source)) return RegisterDevice(*device);
  const auto& dmabuf = std::get<DmaBufMemory>(source);
  if (dmabuf.fd < 0 || dmabuf.length == 0) {
    return Status::InvalidArgument("dma-buf registration needs an fd and a length");
  }
  MrHandle mr(ibv_reg_dmabuf_mr(pd_->pd(), dmabuf.offset, dmabuf.length, dmabuf.iova, dmabuf.fd,
                                kRegionAccess));
  if (!mr) {
    const int err = errno;
    // Providers without dma-buf support (Soft-RoCE among them) say EOPNOTSUPP, kernels without
    // it EPROTONOSUPPORT (rdma-core's fallback): the caller steps down the buffer ladder.
    if (err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == ENOSYS) {
      return Status::Unimplemented(fmt::format("ibv_reg_dmabuf_mr on {}: {}",
                                               ibv_get_device_name(pd_->context()->device),
                                               std::strerror(err)));
    }
    return VerbsErrno(err,
                      fmt::format("ibv_reg_dmabuf_mr(fd {}, {} bytes)", dmabuf.fd, dmabuf.length));
  }
  return std::shared_ptr<RegisteredRegion>(std::make_shared<VerbsRegion>(
      pd_, std::move(mr), MemoryKind::kDmaBuf, std::span<std::byte>(), nullptr));
}

Result<std::shared_ptr<RegisteredRegion>> VerbsRegistrar::RegisterDevice(
    const DeviceMemory& device) {
  if (device.address == 0 || device.length == 0) {
    return Status::InvalidArgument("device memory registration needs an address and a length");
  }
  // ibv_reg_mr on a GPU VA: the kernel hands ranges it cannot pin itself to a peer-memory client
  // (nvidia-peermem). Without one the pin fails, usually EFAULT ("Bad address"); the caller then
  // steps down the buffer ladder, so a failure is kUnimplemented with the errno kept, except a
  // full memlock limit, which is what it says.
  void* addr = reinterpret_cast<void*>(device.address);
  MrHandle mr(ibv_reg_mr(pd_->pd(), addr, device.length, kRegionAccess));
  if (!mr) {
    const int err = errno;
    if (err == ENOMEM) {
      return VerbsErrno(err, fmt::format("ibv_reg_mr on device memory ({} bytes at {:#x})",
                                         device.length, device.address));
    }
    return Status(StatusCode::kUnimplemented,
                  fmt::format("ibv_reg_mr on device memory ({} bytes at {:#x}) on {}: {}",
                              device.length, device.address,
                              ibv_get_device_name(pd_->context()->device), std::strerror(err)),
                  StatusDetail{.sys_errno = err});
  }
  return std::shared_ptr<RegisteredRegion>(std::make_shared<VerbsRegion>(
      pd_, std::move(mr), MemoryKind::kDevice, std::span<std::byte>(), nullptr));
}

Result<std::shared_ptr<VerbsRegion>> VerbsRegistrar::AllocateArena(size_t length) {
  if (length == 0) return Status::InvalidArgument("AllocateArena: zero length");
  length = AlignUp(length, PageSize());
  REELFS_ASSIGN_OR_RETURN(std::shared_ptr<void> memory, MapArena(length));
  std::span<std::byte> bytes(static_cast<std::byte*>(memory.get()), length);
  return RegisterHost(pd_, bytes, std::move(memory));
}

class RegisteredSlabPool::Slice : public RegisteredSlice {
 public:
  Slice(std::shared_ptr<RegisteredSlabPool> pool, size_t slot)
      : pool_(std::move(pool)), slot_(slot) {}
  ~Slice() override { pool_->Return(slot_); }
  std::span<std::byte> bytes() override {
    return pool_->region_->host_bytes().subspan(slot_ * pool_->slot_size_, pool_->slot_size_);
  }
  uint32_t lkey() const override { return pool_->region_->lkey(); }
  uint32_t rkey() const override { return pool_->region_->rkey(); }
  uint64_t remote_addr() const override {
    return pool_->region_->remote_addr() + slot_ * pool_->slot_size_;
  }

 private:
  std::shared_ptr<RegisteredSlabPool> pool_;  // keeps the registration alive while sliced
  size_t slot_;
};

RegisteredSlabPool::RegisteredSlabPool(std::shared_ptr<VerbsRegion> region, size_t slot_size,
                                       size_t slots)
    : region_(std::move(region)), slot_size_(slot_size) {
  // Highest first so Allocate pops slot 0 first (tests and dumps read in address order).
  for (size_t i = slots; i > 0; --i) free_.push_back(i - 1);
}

Result<std::shared_ptr<RegisteredSlabPool>> RegisteredSlabPool::Create(VerbsRegistrar& registrar,
                                                                       size_t slot_size,
                                                                       size_t slots) {
  if (slot_size == 0 || slots == 0 || slot_size % PageSize() != 0) {
    return Status::InvalidArgument(
        fmt::format("slab pool: slot size {} must be a non-zero multiple of the page size, "
                    "slots {} non-zero",
                    slot_size, slots));
  }
  REELFS_ASSIGN_OR_RETURN(auto region, registrar.AllocateArena(slot_size * slots));
  return std::shared_ptr<RegisteredSlabPool>(
      new RegisteredSlabPool(std::move(region), slot_size, slots));
}

Result<std::unique_ptr<RegisteredSlice>> RegisteredSlabPool::Allocate(size_t size) {
  if (size == 0 || size > slot_size_) {
    return Status::InvalidArgument(
        fmt::format("slab pool: {} bytes do not fit a {}-byte slot", size, slot_size_));
  }
  size_t slot = 0;
  {
    MutexLock lock(mutex_);
    if (free_.empty()) return Status::ResourceExhausted("slab pool: every slot is in use");
    slot = free_.back();
    free_.pop_back();
  }
  return std::unique_ptr<RegisteredSlice>(new Slice(shared_from_this(), slot));
}

void RegisteredSlabPool::Return(size_t slot) {
  MutexLock lock(mutex_);
  free_.push_back(slot);
}

}  // namespace reelfs::rdmaio::verbs

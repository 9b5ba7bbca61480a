#include "cuda/pinning_registrar.h"

#include <optional>
#include <utility>

#include "common/log.h"

namespace reelfs::cuda {
namespace {

constexpr std::string_view kSubject = "cuda";

// Host memory that is only pinned (no inner registrar).
class PinnedRegion final : public rdmaio::RegisteredRegion {
 public:
  explicit PinnedRegion(std::span<std::byte> bytes) : bytes_(bytes) {}
  rdmaio::MemoryKind kind() const override { return rdmaio::MemoryKind::kHost; }
  uint64_t length() const override { return bytes_.size(); }
  std::span<std::byte> host_bytes() const override { return bytes_; }

 private:
  std::span<std::byte> bytes_;
};

// What an aliasing region pointer keeps alive: members in teardown order reversed (the inner
// registration is destroyed before the pin, as gpu_ladder.h's GpuLanding does).
struct PinnedHolder {
  std::optional<PinnedHostRange> pin;
  std::shared_ptr<rdmaio::RegisteredRegion> region;
  std::atomic<uint64_t>* pinned_bytes = nullptr;
  ~PinnedHolder() {
    region.reset();
    if (pin) pinned_bytes->fetch_sub(pin->bytes().size(), std::memory_order_relaxed);
  }
};

}  // namespace

PinningRegistrar::PinningRegistrar(CudaApi& api, std::shared_ptr<rdmaio::MemoryRegistrar> inner,
                                   PinOptions options)
    : api_(api), inner_(std::move(inner)), options_(options) {}

Result<std::shared_ptr<rdmaio::RegisteredRegion>> PinningRegistrar::Register(
    const rdmaio::MemorySource& source) {
  const auto* host = std::get_if<rdmaio::HostMemory>(&source);
  if (host == nullptr) {
    if (inner_ == nullptr) {
      return Status::Unimplemented("pinning registrar: only host memory without an RDMA device");
    }
    return inner_->Register(source);
  }
  if (host->bytes.empty()) return Status::InvalidArgument("pinning registrar: empty range");
  auto holder = std::make_shared<PinnedHolder>();
  holder->pinned_bytes = &pinned_bytes_;
  auto pin = PinnedHostRange::Pin(api_, host->bytes, options_);
  if (pin.ok()) {
    holder->pin.emplace(std::move(*pin));
    pinned_bytes_.fetch_add(host->bytes.size(), std::memory_order_relaxed);
  } else {
    failures_.fetch_add(1, std::memory_order_relaxed);
    if (!warned_.exchange(true)) {
      REELFS_LOG_WARN(kSubject, "--cuda-pin: {}; this and later failures leave buffers unpinned",
                      pin.status().ToString());
    }
    if (inner_ == nullptr) return pin.status();
  }
  if (inner_ != nullptr) {
    REELFS_ASSIGN_OR_RETURN(holder->region, inner_->Register(source));
  } else {
    holder->region = std::make_shared<PinnedRegion>(host->bytes);
  }
  rdmaio::RegisteredRegion* region = holder->region.get();
  return std::shared_ptr<rdmaio::RegisteredRegion>(std::move(holder), region);
}

}  // namespace reelfs::cuda

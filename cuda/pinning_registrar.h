// PinningRegistrar: a MemoryRegistrar that page-locks host memory for CUDA (cudaHostRegister,
// host_pin.h) before handing it to the registrar it wraps (the RDMA one, or none). It is what
// `reelfs mount --cuda-pin` gives the prefetch pool: every buffer the pool allocates is pinned
// once, and recycled buffers stay pinned (docs/gpu.md "Pinning host memory").
//
// The region returned for host memory is the inner registrar's own region (an aliasing pointer:
// a channel that downcasts to its region type still can), kept alive together with the pin; the
// NIC registration goes first at teardown, then the pin. Without an inner registrar it is a
// plain host region. A pin that fails (memlock, the driver) costs only the pin: the memory is
// still registered with the inner registrar, one warning is logged, and failures() counts it.
// Device and dma-buf memory go to the inner registrar untouched (kUnimplemented without one).
//
// Thread-safety: Register may be called from any thread (CudaApi and the inner registrar are
// thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "cuda/cuda_api.h"
#include "cuda/host_pin.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::cuda {

class PinningRegistrar final : public rdmaio::MemoryRegistrar {
 public:
  // `api` must outlive every region; `inner` may be null.
  PinningRegistrar(CudaApi& api, std::shared_ptr<rdmaio::MemoryRegistrar> inner,
                   PinOptions options = {});

  Result<std::shared_ptr<rdmaio::RegisteredRegion>> Register(
      const rdmaio::MemorySource& source) override;

  uint64_t pinned_bytes() const { return pinned_bytes_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  CudaApi& api_;
  std::shared_ptr<rdmaio::MemoryRegistrar> inner_;
  PinOptions options_;
  std::atomic<uint64_t> pinned_bytes_{0};  // pinned by regions alive now
  std::atomic<uint64_t> failures_{0};
  std::atomic<bool> warned_{false};
};

}  // namespace reelfs::cuda

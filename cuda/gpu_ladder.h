// The GPU buffer ladder: how bytes fetched by RDMA reach a GPU buffer on this machine.
//
// Given the probe (probe.h), the RDMA registrar (rdmaio/registered_memory.h; none without an
// RDMA device) and a GPU buffer, ChooseLanding tries each rung in turn and stops at the first
// that works:
//   1. dma-buf: cuMemGetHandleForAddressRange exports the buffer, ibv_reg_dmabuf_mr imports it;
//      needs DMA_BUF_SUPPORTED, NVIDIA's open kernel module and a NIC that imports dma-buf.
//   2. nvidia-peermem: ibv_reg_mr on the device VA; needs GPU_DIRECT_RDMA_SUPPORTED and the
//      nvidia_peermem module (MLNX/DOCA-OFED's peer-memory API).
//   3. host staging: the caller's host buffer is pinned (host_pin.h) and registered; RDMA lands
//      there and cudaMemcpyAsync copies it to the GPU.
//   4. pread: no RDMA landing at all; the bytes come through plain reads into host memory.
// Every step down logs exactly one line (subject "cuda", INFO) naming the rung and the reason,
// and the same reasons are returned, so the caller can report which rung is active and why.
//
// Thread-safety: ChooseLanding runs on the caller's thread and calls the CudaApi and registrar it
// is given (both thread-safe); a GpuLanding is owned by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_api.h"
#include "cuda/host_pin.h"
#include "cuda/probe.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::cuda {

enum class Rung : uint8_t { kDmaBuf, kPeerMem, kHostStaging, kPread };
std::string_view RungName(Rung rung);  // "dma-buf", "nvidia-peermem", "host-staging", "pread"

struct GpuBuffer {
  int device = 0;        // CUDA device ordinal the buffer lives on
  uint64_t address = 0;  // device VA (cudaMalloc); dma-buf needs it and `length` page-aligned
  uint64_t length = 0;   // bytes
};

// Rungs can be turned off (as NCCL_DMABUF_ENABLE=0 does for NCCL): each defaults to on.
struct LadderOptions {
  bool dma_buf = true;       // try rung 1
  bool peermem = true;       // try rung 2
  bool host_staging = true;  // try rung 3
  PinOptions pin;            // how rung 3 pins the staging buffer
};

struct StepDown {
  Rung from = Rung::kDmaBuf;
  std::string reason;  // "GPU 0 (NVIDIA H200) does not report DMA_BUF_SUPPORTED"
};

struct GpuLanding {
  Rung rung = Rung::kPread;
  // Declaration order is teardown order, reversed: the NIC registration goes before the pin.
  // kHostStaging: the staging buffer, pinned for the H2D copies.
  std::optional<PinnedHostRange> staging_pin;
  // Rungs 1-3: the memory the peer writes into; null for kPread.
  std::shared_ptr<rdmaio::RegisteredRegion> region;
  // Rungs 1-2 on a device whose RDMA write ordering is below owner: call
  // CudaApi::FlushGpuDirectRdmaWrites after the writes and before a kernel reads them.
  bool needs_flush = false;
  std::vector<StepDown> step_downs;  // one per rung passed over, in order
};

// Chooses the highest rung that works for `buffer`. `registrar` may be null (no RDMA device);
// `staging` is the host buffer for rung 3 (page-aligned; empty: no staging rung). Never fails:
// rung 4 always works. `api` must outlive the landing (it unpins through it).
GpuLanding ChooseLanding(CudaApi& api, const GpuProbe& probe, rdmaio::MemoryRegistrar* registrar,
                         const GpuBuffer& buffer, std::span<std::byte> staging,
                         const LadderOptions& options = {});

}  // namespace reelfs::cuda

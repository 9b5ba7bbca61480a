// IpcLanding: another process's GPU memory, named by a CUDA IPC handle, opened in this process
// and made writable by the RDMA device: how the daemon takes a side-channel client's `cuda_ipc`
// buffer (docs/protocols/side-channel.md section 4).
//
// Open maps the handle (cudaIpcOpenMemHandle), checks that the declared length fits the
// allocation, and walks the GPU buffer ladder (gpu_ladder.h) over rungs 1 and 2 only (dma-buf,
// nvidia-peermem): the daemon stages nothing for a client, which stages itself when the NIC
// cannot reach its memory. The first open creates this process's CUDA context on the device.
//
// Thread-safety: Open from any thread (CudaApi is thread-safe); an IpcLanding is owned by one
// thread at a time and may be destroyed on any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "cuda/cuda_api.h"
#include "cuda/gpu_ladder.h"
#include "cuda/probe.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::cuda {

class IpcLanding {
 public:
  // kUnimplemented with the reason where no rung works (no usable GPU, no RDMA device: both
  // before CUDA is called; neither dma-buf nor peermem: the step-down reasons joined);
  // kInvalidArgument for a handle CUDA refuses or a `length` (non-zero) beyond the allocation.
  // `api` must outlive the landing.
  static Result<std::unique_ptr<IpcLanding>> Open(CudaApi& api, const GpuProbe& probe,
                                                  rdmaio::MemoryRegistrar* registrar,
                                                  const IpcHandle& handle, uint64_t length);
  ~IpcLanding();  // the NIC registration goes, then the IPC mapping
  IpcLanding(const IpcLanding&) = delete;
  IpcLanding& operator=(const IpcLanding&) = delete;

  const GpuLanding& landing() const { return landing_; }
  uint64_t address() const { return address_; }  // the allocation's start in this process
  // After the NIC's writes and before their consumer is told: cuFlushGPUDirectRDMAWrites where
  // the device's write ordering asks for it (landing().needs_flush), else nothing.
  [[nodiscard]] Status AfterRdmaWrites();

 private:
  IpcLanding(CudaApi& api, uint64_t address) : api_(api), address_(address) {}

  CudaApi& api_;
  uint64_t address_;
  GpuLanding landing_;  // holds the registration; released before the mapping is closed
};

}  // namespace reelfs::cuda

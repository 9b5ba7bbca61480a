// GpuImporter: how the side channel takes a `cuda_ipc` buffer (docs/protocols/side-channel.md
// section 4): another process's GPU memory, opened in the daemon and registered with the data
// channel's NIC. api/ does not include cuda/: the mount wires an implementation over
// cuda::IpcLanding (cli/mount_gpu.h); without one the server answers EOPNOTSUPP.
//
// Thread-safety: ImportCudaIpc may be called from any thread; an ImportedGpuMemory is owned by
// one thread at a time and may be destroyed on any thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "common/result.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::api {

class ImportedGpuMemory {
 public:
  virtual ~ImportedGpuMemory() = default;  // deregisters, then unmaps
  // What the NIC writes a READ into (device memory: no host bytes).
  virtual const std::shared_ptr<rdmaio::RegisteredRegion>& region() const = 0;
  // After the NIC's writes of a READ and before its DONE: makes them visible to the GPU's
  // consumers where the device needs a flush for that.
  [[nodiscard]] virtual Status AfterRdmaWrites() = 0;
};

class GpuImporter {
 public:
  virtual ~GpuImporter() = default;
  // kUnimplemented with the reason where the NIC cannot write the memory (no usable GPU, no
  // RDMA device, neither dma-buf nor nvidia-peermem); kInvalidArgument for a handle CUDA
  // refuses or a `length` beyond its allocation.
  virtual Result<std::unique_ptr<ImportedGpuMemory>> ImportCudaIpc(
      const std::array<uint8_t, 64>& handle, uint64_t length) = 0;
};

}  // namespace reelfs::api

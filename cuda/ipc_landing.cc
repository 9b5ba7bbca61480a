#include "cuda/ipc_landing.h"

#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "cuda/cuda_status.h"

namespace reelfs::cuda {

Result<std::unique_ptr<IpcLanding>> IpcLanding::Open(CudaApi& api, const GpuProbe& probe,
                                                     rdmaio::MemoryRegistrar* registrar,
                                                     const IpcHandle& handle, uint64_t length) {
  if (!probe.usable()) {
    return Status::Unimplemented("CUDA IPC unavailable: no usable GPU: " + probe.error);
  }
  if (length == 0) return Status::InvalidArgument("CUDA IPC: a length of 0");
  // Refused before CUDA opens anything: opening would create a CUDA context for nothing.
  if (registrar == nullptr) {
    return Status::Unimplemented("CUDA IPC memory needs an RDMA device to write it (no --rdma)");
  }
  uint64_t address = 0;
  if (const int code = api.IpcOpenMemHandle(handle, &address); code != cuda_error::kSuccess) {
    (void)api.GetLastError();
    const Status why = CudaToStatus(api, code, "cudaIpcOpenMemHandle");
    return Status::InvalidArgument(std::string(why.message()));
  }
  // From here the mapping is the landing's: its destructor closes it on every path below.
  std::unique_ptr<IpcLanding> ipc(new IpcLanding(api, address));
  int device = 0;
  uint64_t base = 0, size = 0;
  if (const int code = api.GetAllocation(address, &device, &base, &size);
      code != cuda_error::kSuccess) {
    (void)api.GetLastError();
    return CudaToStatus(api, code, "CUDA IPC: the allocation's extent");
  }
  // The mapping starts at the exported allocation; the declared window must lie inside it, or
  // the NIC would be pointed at memory the client never offered.
  if (address < base || address - base > size || length > size - (address - base)) {
    return Status::InvalidArgument(
        fmt::format("CUDA IPC: {} bytes declared, the allocation holds {} from its start", length,
                    address >= base && address - base <= size ? size - (address - base) : 0));
  }
  LadderOptions options;
  options.host_staging = false;  // a client's memory: the client stages, not the daemon
  ipc->landing_ = ChooseLanding(api, probe, registrar,
                                GpuBuffer{.device = device, .address = address, .length = length},
                                /*staging=*/{}, options);
  if (ipc->landing_.region == nullptr) {
    std::string why;
    for (const StepDown& step : ipc->landing_.step_downs) {
      if (step.from == Rung::kHostStaging) continue;
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", RungName(step.from), step.reason);
    }
    return Status::Unimplemented("CUDA IPC memory cannot be written by the RDMA device: " + why);
  }
  return ipc;
}

IpcLanding::~IpcLanding() {
  landing_ = GpuLanding{};  // deregistered before the memory is unmapped
  if (const int code = api_.IpcCloseMemHandle(address_); code != cuda_error::kSuccess) {
    (void)api_.GetLastError();
    REELFS_LOG_WARN("cuda", "{}", CudaToStatus(api_, code, "cudaIpcCloseMemHandle").ToString());
  }
}

Status IpcLanding::AfterRdmaWrites() {
  if (!landing_.needs_flush) return Status::Ok();
  if (const int code = api_.FlushGpuDirectRdmaWrites(); code != cuda_error::kSuccess) {
    (void)api_.GetLastError();
    return CudaToStatus(api_, code, "cuFlushGPUDirectRDMAWrites");
  }
  return Status::Ok();
}

}  // namespace reelfs::cuda

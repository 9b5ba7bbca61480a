// Probe: what this machine offers for GPU landing, as one value that always comes back.
//
// Without a usable GPU the probe does not fail: GpuProbe::error holds one line naming why (no
// driver, the stub library, no visible device, a driver older than the runtime), so the mount
// and reelfs-gpu-probe print it and carry on with host memory. With GPUs it lists, per device,
// the attributes the buffer ladder (gpu_ladder.h) decides on, and the host facts it needs: which
// NVIDIA kernel module is loaded (dma-buf export needs the open one) and whether nvidia-peermem is.
//
// Thread-safety: Probe calls into the CudaApi it is given (see cuda_api.h: CUDA is initialised
// by the first call, so probe after daemonizing); the values are plain data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "cuda/cuda_api.h"

namespace reelfs::cuda {

enum class KernelModule : uint8_t {
  kNone,         // no /proc/driver/nvidia/version: no NVIDIA kernel module loaded
  kOpen,         // "Open Kernel Module": exports dma-buf
  kProprietary,  // the closed module: no dma-buf export; peermem only
};
std::string_view KernelModuleName(KernelModule module);  // "none", "open", "proprietary"

// Where the host facts are read from; tests point these into a temporary directory.
struct HostPaths {
  std::string nvidia_version = "/proc/driver/nvidia/version";
  std::string modules = "/proc/modules";
  std::string peermem_module = "/sys/module/nvidia_peermem";  // a directory when loaded
};

struct HostFacts {
  KernelModule kernel_module = KernelModule::kNone;
  std::string nvrm_version;     // the first line of the version file, as is; empty without one
  bool peermem_loaded = false;  // nvidia_peermem in /proc/modules or /sys/module
};

// The kernel module named by the text of /proc/driver/nvidia/version.
KernelModule ParseKernelModule(std::string_view nvidia_version_text);
// Whether a /proc/modules text lists nvidia_peermem.
bool ModulesListPeermem(std::string_view proc_modules_text);
// Reads the files above; a missing file is a fact (no module), not an error.
HostFacts ReadHostFacts(const HostPaths& paths = {});

struct GpuDevice {
  int index = 0;
  DeviceInfo info;
  bool dma_buf_supported = false;
  bool gpu_direct_rdma_supported = false;
  int rdma_writes_ordering = 0;  // CUGPUDirectRDMAWritesOrdering (kRdmaWritesOrderingOwner...)
  bool host_register_supported = false;
};

struct GpuProbe {
  int driver_version = 0;   // CUDA version the driver supports (12080), 0 without a driver
  int runtime_version = 0;  // of the cudart linked in
  HostFacts host;
  std::vector<GpuDevice> devices;
  // Empty when at least one device is usable; otherwise one line saying why not.
  std::string error;
  int error_code = 0;  // the cudaError_t behind `error`, 0 if none

  bool usable() const { return error.empty() && !devices.empty(); }
};

// Queries `api` and combines the answers with `host`. Never fails: see GpuProbe::error.
GpuProbe Probe(CudaApi& api, const HostFacts& host);

// 13000 -> "13.0", 12040 -> "12.4"; "none" for 0.
std::string FormatCudaVersion(int version);

// {"usable":..., "error":..., "driver_version":"12.8", ..., "devices":[...]} (docs/gpu.md).
Json ToJson(const GpuProbe& probe);

// One line for logs, `reelfs mount --verbose` and user.reelfs.mount's "gpu": the error without a
// usable GPU; otherwise the devices and what the ladder's rungs need, e.g. "1 GPU: 0 NVIDIA H200
// (dma-buf yes, GPUDirect RDMA yes, host register yes); kernel module open, nvidia_peermem not
// loaded; CUDA driver 13.0, runtime 13.0".
std::string Summary(const GpuProbe& probe);

}  // namespace reelfs::cuda

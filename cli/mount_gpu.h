// The mount's GPU facts (docs/gpu.md "Probe"): where reelfs was built with CUDA, the daemon
// probes once, after daemonizing (CUDA in a forked child is undefined, so never before the
// fork), and keeps the CudaApi for what later uses it; elsewhere the probe says it was not built.
// The summary goes into user.reelfs.mount ("gpu"), the log and `reelfs mount --verbose`.
//
// Thread-safety: ProbeMountGpu from the daemon's main thread; the result is then read-only.
#pragma once

#include <memory>

#include "cuda/cuda_api.h"
#include "cuda/probe.h"

namespace reelfs::cli {

struct MountGpu {
  std::unique_ptr<cuda::CudaApi> api;  // null where reelfs was built without CUDA
  cuda::GpuProbe probe;                // probe.error says why there is no usable GPU
};

MountGpu ProbeMountGpu();

}  // namespace reelfs::cli

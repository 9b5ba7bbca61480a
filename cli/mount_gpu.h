// The mount's GPU facts (docs/gpu.md "Probe"): where reelfs was built with CUDA, the daemon
// probes once, after daemonizing (CUDA in a forked child is undefined, so never before the
// fork), and keeps the CudaApi for what later uses it; elsewhere the probe says it was not built.
// The summary goes into user.reelfs.mount ("gpu"), the log and `reelfs mount --verbose`.
//
// Thread-safety: ProbeMountGpu from the daemon's main thread; the result is then read-only. The
// importer may be called from any thread.
#pragma once

#include <memory>

#include "api/server/gpu_importer.h"
#include "cuda/cuda_api.h"
#include "cuda/probe.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::cli {

struct MountGpu {
  std::unique_ptr<cuda::CudaApi> api;  // null where reelfs was built without CUDA
  cuda::GpuProbe probe;                // probe.error says why there is no usable GPU
};

MountGpu ProbeMountGpu();

// The side channel's CUDA IPC buffers on this mount (cuda::IpcLanding over the probe and the
// data channel's `registrar`, null without --rdma); null where reelfs was built without CUDA.
// `gpu` and `registrar` must outlive it.
std::unique_ptr<api::GpuImporter> MakeGpuImporter(const MountGpu& gpu,
                                                  rdmaio::MemoryRegistrar* registrar);

}  // namespace reelfs::cli

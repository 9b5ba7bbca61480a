// The real CudaApi: cudart_static for the runtime calls, the driver API through
// cudaGetDriverEntryPointByVersion (no libcuda at link time), so a binary with it starts on any
// machine and learns from error codes whether a driver is there. Part of target reelfs_cuda,
// built only where the CUDA toolkit is found (REELFS_CUDA, cmake/ReelfsCuda.cmake).
//
// Creating it calls nothing in CUDA; the first method call initialises the runtime, and the first
// driver call resolves every driver entry point once. Make both after daemonizing.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>

#include "cuda/cuda_api.h"

namespace reelfs::cuda {

std::unique_ptr<CudaApi> CreateRealCudaApi();

}  // namespace reelfs::cuda

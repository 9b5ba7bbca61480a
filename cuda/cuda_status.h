// CUDA error codes to Status: the one place a cudaError_t / CUresult becomes a reelfs::Status
// (docs/conventions.md "Errors": a foreign code is converted once, in the module that owns it).
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "common/status.h"
#include "cuda/cuda_api.h"

namespace reelfs::cuda {

// The canonical code for a CUDA error, chosen by what the caller does next: the no-driver codes
// are kFailedPrecondition (nothing helps until a driver or device appears), an unsupported call
// is kUnimplemented (step down the buffer ladder), an allocation failure kResourceExhausted.
StatusCode CudaStatusCode(int code);

// "context: cudaErrorNoDevice (100)"; OK for kSuccess. `name` is CudaApi::ErrorName(code).
Status CudaToStatus(int code, std::string_view name, std::string_view context);

// The same, with the name taken from `api`.
Status CudaToStatus(CudaApi& api, int code, std::string_view context);

}  // namespace reelfs::cuda

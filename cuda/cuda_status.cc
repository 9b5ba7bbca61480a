#include "cuda/cuda_status.h"

#include <string>

#include <fmt/format.h>

namespace reelfs::cuda {

StatusCode CudaStatusCode(int code) {
  switch (code) {
    case cuda_error::kSuccess:
      return StatusCode::kOk;
    case cuda_error::kInvalidValue:
      return StatusCode::kInvalidArgument;
    case cuda_error::kMemoryAllocation:
      return StatusCode::kResourceExhausted;
    // No driver, the stub library, no device: retrying cannot help until the machine changes.
    case cuda_error::kStubLibrary:
    case cuda_error::kInsufficientDriver:
    case cuda_error::kNoDevice:
      return StatusCode::kFailedPrecondition;
    // This driver or device cannot do it: the caller takes the next rung down.
    case cuda_error::kSymbolNotFound:
    case cuda_error::kNotSupported:
      return StatusCode::kUnimplemented;
    case cuda_error::kHostMemoryAlreadyRegistered:
      return StatusCode::kAlreadyExists;
    case cuda_error::kHostMemoryNotRegistered:
      return StatusCode::kNotFound;
    default:
      return StatusCode::kInternal;
  }
}

Status CudaToStatus(int code, std::string_view name, std::string_view context) {
  if (code == cuda_error::kSuccess) return Status::Ok();
  return Status(CudaStatusCode(code), fmt::format("{}: {} ({})", context, name, code));
}

Status CudaToStatus(CudaApi& api, int code, std::string_view context) {
  if (code == cuda_error::kSuccess) return Status::Ok();
  return CudaToStatus(code, api.ErrorName(code), context);
}

}  // namespace reelfs::cuda

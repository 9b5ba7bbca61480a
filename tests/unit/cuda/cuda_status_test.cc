// cuda/cuda_status.h: one row per CUDA code reelfs acts on.
#include "cuda/cuda_status.h"

#include <doctest/doctest.h>

#include "cuda/fake/fake_cuda_api.h"

namespace reelfs::cuda {
namespace {

TEST_CASE("CudaStatusCode: one row per code") {
  struct Row {
    int code;
    StatusCode want;
  };
  const Row rows[] = {
      {cuda_error::kSuccess, StatusCode::kOk},
      {cuda_error::kInvalidValue, StatusCode::kInvalidArgument},
      {cuda_error::kMemoryAllocation, StatusCode::kResourceExhausted},
      {cuda_error::kStubLibrary, StatusCode::kFailedPrecondition},
      {cuda_error::kInsufficientDriver, StatusCode::kFailedPrecondition},
      {cuda_error::kNoDevice, StatusCode::kFailedPrecondition},
      {cuda_error::kSymbolNotFound, StatusCode::kUnimplemented},
      {cuda_error::kNotSupported, StatusCode::kUnimplemented},
      {cuda_error::kHostMemoryAlreadyRegistered, StatusCode::kAlreadyExists},
      {cuda_error::kHostMemoryNotRegistered, StatusCode::kNotFound},
      {999, StatusCode::kInternal},
  };
  for (const Row& row : rows) {
    CAPTURE(row.code);
    CHECK(CudaStatusCode(row.code) == row.want);
  }
}

TEST_CASE("CudaToStatus names the call, the error and its number") {
  CHECK(CudaToStatus(cuda_error::kSuccess, "cudaSuccess", "x").ok());
  const Status s = CudaToStatus(cuda_error::kNoDevice, "cudaErrorNoDevice", "cudaGetDeviceCount");
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "cudaGetDeviceCount: cudaErrorNoDevice (100)");

  FakeCudaApi api;
  const Status named = CudaToStatus(api, cuda_error::kMemoryAllocation, "cudaHostRegister");
  CHECK(named.code() == StatusCode::kResourceExhausted);
  CHECK(named.message() == "cudaHostRegister: cudaErrorMemoryAllocation (2)");
}

}  // namespace
}  // namespace reelfs::cuda

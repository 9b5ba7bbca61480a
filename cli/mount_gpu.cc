#include "cli/mount_gpu.h"

// REELFS_HAVE_CUDA: cli/CMakeLists.txt sets it where cuda/'s runtime part (reelfs_cuda) is built.
#if REELFS_HAVE_CUDA
#include "cuda/real_cuda_api.h"
#endif

namespace reelfs::cli {

MountGpu ProbeMountGpu() {
  MountGpu gpu;
#if REELFS_HAVE_CUDA
  gpu.api = cuda::CreateRealCudaApi();
  gpu.probe = cuda::Probe(*gpu.api, cuda::ReadHostFacts());
#else
  gpu.probe.host = cuda::ReadHostFacts();
  gpu.probe.error =
      "reelfs was built without CUDA (REELFS_CUDA=OFF or no toolkit found): GPU landing is off";
#endif
  return gpu;
}

}  // namespace reelfs::cli

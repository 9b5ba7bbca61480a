#include "cli/mount_gpu.h"

#include <utility>

#include "cuda/ipc_landing.h"

// REELFS_HAVE_CUDA: cli/CMakeLists.txt sets it where cuda/'s runtime part (reelfs_cuda) is built.
#if REELFS_HAVE_CUDA
#include "cuda/real_cuda_api.h"
#endif

namespace reelfs::cli {
namespace {

class ImportedIpc final : public api::ImportedGpuMemory {
 public:
  explicit ImportedIpc(std::unique_ptr<cuda::IpcLanding> landing) : landing_(std::move(landing)) {}
  const std::shared_ptr<rdmaio::RegisteredRegion>& region() const override {
    return landing_->landing().region;
  }
  Status AfterRdmaWrites() override { return landing_->AfterRdmaWrites(); }

 private:
  std::unique_ptr<cuda::IpcLanding> landing_;
};

class IpcImporter final : public api::GpuImporter {
 public:
  IpcImporter(cuda::CudaApi& api, const cuda::GpuProbe& probe, rdmaio::MemoryRegistrar* registrar)
      : api_(api), probe_(probe), registrar_(registrar) {}

  Result<std::unique_ptr<api::ImportedGpuMemory>> ImportCudaIpc(
      const std::array<uint8_t, 64>& handle, uint64_t length) override {
    REELFS_ASSIGN_OR_RETURN(std::unique_ptr<cuda::IpcLanding> landing,
                            cuda::IpcLanding::Open(api_, probe_, registrar_, handle, length));
    return std::unique_ptr<api::ImportedGpuMemory>(
        std::make_unique<ImportedIpc>(std::move(landing)));
  }

 private:
  cuda::CudaApi& api_;
  const cuda::GpuProbe& probe_;
  rdmaio::MemoryRegistrar* registrar_;
};

}  // namespace

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

std::unique_ptr<api::GpuImporter> MakeGpuImporter(const MountGpu& gpu,
                                                  rdmaio::MemoryRegistrar* registrar) {
  if (gpu.api == nullptr) return nullptr;
  return std::make_unique<IpcImporter>(*gpu.api, gpu.probe, registrar);
}

}  // namespace reelfs::cli

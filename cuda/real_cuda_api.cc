#include "cuda/real_cuda_api.h"

#include <cuda.h>  // driver types only: the functions come from entry points, not from libcuda
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <string>

namespace reelfs::cuda {
namespace {

static_assert(cudaSuccess == cuda_error::kSuccess);
static_assert(cudaErrorInvalidValue == cuda_error::kInvalidValue);
static_assert(cudaErrorMemoryAllocation == cuda_error::kMemoryAllocation);
static_assert(cudaErrorStubLibrary == cuda_error::kStubLibrary);
static_assert(cudaErrorInsufficientDriver == cuda_error::kInsufficientDriver);
static_assert(cudaErrorNoDevice == cuda_error::kNoDevice);
static_assert(cudaErrorSymbolNotFound == cuda_error::kSymbolNotFound);
static_assert(cudaErrorHostMemoryAlreadyRegistered == cuda_error::kHostMemoryAlreadyRegistered);
static_assert(cudaErrorHostMemoryNotRegistered == cuda_error::kHostMemoryNotRegistered);
static_assert(cudaErrorNotSupported == cuda_error::kNotSupported);
static_assert(cudaErrorInvalidResourceHandle == cuda_error::kInvalidResourceHandle);
static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle));
static_assert(CUDA_ERROR_NOT_SUPPORTED == cuda_error::kNotSupported);
static_assert(CUDA_ERROR_NOT_FOUND == cuda_error::kSymbolNotFound);
static_assert(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER == kRdmaWritesOrderingOwner);

// One driver function, at the ABI version its PFN typedef names, and the answer to resolving it.
template <class Fn>
struct Entry {
  Fn fn = nullptr;
  int code = cuda_error::kSymbolNotFound;  // kSuccess once `fn` is set
};

template <class Fn>
void Resolve(const char* symbol, unsigned version, Entry<Fn>* entry) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t code =
      cudaGetDriverEntryPointByVersion(symbol, &address, version, cudaEnableDefault, &found);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    entry->code = code;  // no driver: cudaErrorInsufficientDriver
  } else if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    entry->code = cuda_error::kSymbolNotFound;  // a driver older than the call
  } else {
    entry->fn = reinterpret_cast<Fn>(address);
    entry->code = cuda_error::kSuccess;
  }
}

struct DriverEntryPoints {
  Entry<PFN_cuDeviceGet_v2000> device_get;
  Entry<PFN_cuDeviceGetAttribute_v2000> device_get_attribute;
  Entry<PFN_cuMemGetHandleForAddressRange_v11070> mem_get_handle_for_address_range;
  Entry<PFN_cuPointerSetAttribute_v6000> pointer_set_attribute;
  Entry<PFN_cuFlushGPUDirectRDMAWrites_v11030> flush_gpu_direct_rdma_writes;
  Entry<PFN_cuMemGetAddressRange_v3020> mem_get_address_range;
};

CUdevice_attribute DriverAttribute(DeviceAttribute attribute) {
  switch (attribute) {
    case DeviceAttribute::kDmaBufSupported:
      return CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED;
    case DeviceAttribute::kGpuDirectRdmaSupported:
      return CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED;
    case DeviceAttribute::kGpuDirectRdmaWritesOrdering:
      return CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING;
    case DeviceAttribute::kHostRegisterSupported:
      return CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED;
  }
  return CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED;
}

class RealCudaApi final : public CudaApi {
 public:
  int DriverGetVersion(int* version) override { return cudaDriverGetVersion(version); }
  int RuntimeGetVersion(int* version) override { return cudaRuntimeGetVersion(version); }
  int GetDeviceCount(int* count) override { return cudaGetDeviceCount(count); }

  int GetDeviceInfo(int device, DeviceInfo* info) override {
    cudaDeviceProp prop{};
    if (const cudaError_t code = cudaGetDeviceProperties(&prop, device); code != cudaSuccess) {
      return code;
    }
    info->name = prop.name;
    info->total_memory = prop.totalGlobalMem;
    char bus_id[32] = {};  // "0000:17:00.0" and room to spare
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) {
      info->pci_bus_id = bus_id;
    } else {
      (void)cudaGetLastError();
    }
    return cudaSuccess;
  }

  // Through the driver: the runtime's enum has no name for DMA_BUF_SUPPORTED.
  int GetDeviceAttribute(int device, DeviceAttribute attribute, int* value) override {
    const DriverEntryPoints& entry = Driver();
    if (entry.device_get.fn == nullptr) return entry.device_get.code;
    if (entry.device_get_attribute.fn == nullptr) return entry.device_get_attribute.code;
    CUdevice handle = 0;
    if (const CUresult code = entry.device_get.fn(&handle, device); code != CUDA_SUCCESS) {
      return code;
    }
    return entry.device_get_attribute.fn(value, DriverAttribute(attribute), handle);
  }

  int HostRegister(void* ptr, size_t size, unsigned flags) override {
    return cudaHostRegister(ptr, size, flags);
  }
  int HostUnregister(void* ptr) override { return cudaHostUnregister(ptr); }
  int GetLastError() override { return cudaGetLastError(); }
  std::string ErrorName(int code) override {
    return cudaGetErrorName(static_cast<cudaError_t>(code));
  }

  int GetDmaBufFd(uint64_t device_ptr, size_t size, int* fd) override {
    const auto& entry = Driver().mem_get_handle_for_address_range;
    if (entry.fn == nullptr) return entry.code;
    return entry.fn(fd, static_cast<CUdeviceptr>(device_ptr), size,
                    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  }

  int SetSyncMemops(uint64_t device_ptr) override {
    const auto& entry = Driver().pointer_set_attribute;
    if (entry.fn == nullptr) return entry.code;
    const unsigned int on = 1;
    return entry.fn(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, static_cast<CUdeviceptr>(device_ptr));
  }

  int FlushGpuDirectRdmaWrites() override {
    const auto& entry = Driver().flush_gpu_direct_rdma_writes;
    if (entry.fn == nullptr) return entry.code;
    return entry.fn(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                    CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
  }

  int IpcOpenMemHandle(const IpcHandle& handle, uint64_t* device_ptr) override {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.data(), sizeof h);
    void* ptr = nullptr;
    const cudaError_t code = cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess);
    if (code == cudaSuccess) *device_ptr = reinterpret_cast<uint64_t>(ptr);
    return code;
  }

  int IpcCloseMemHandle(uint64_t device_ptr) override {
    return cudaIpcCloseMemHandle(reinterpret_cast<void*>(device_ptr));
  }

  int GetAllocation(uint64_t device_ptr, int* device, uint64_t* base, uint64_t* size) override {
    cudaPointerAttributes attributes{};
    const void* ptr = reinterpret_cast<const void*>(device_ptr);
    if (const cudaError_t code = cudaPointerGetAttributes(&attributes, ptr); code != cudaSuccess) {
      return code;
    }
    const auto& entry = Driver().mem_get_address_range;
    if (entry.fn == nullptr) return entry.code;
    CUdeviceptr start = 0;
    size_t bytes = 0;
    if (const CUresult code = entry.fn(&start, &bytes, static_cast<CUdeviceptr>(device_ptr));
        code != CUDA_SUCCESS) {
      return code;
    }
    *device = attributes.device;
    *base = static_cast<uint64_t>(start);
    *size = bytes;
    return cudaSuccess;
  }

 private:
  // Resolved once, at the first driver call (never at construction: see cuda_api.h).
  const DriverEntryPoints& Driver() {
    std::call_once(resolved_, [this] {
      Resolve("cuDeviceGet", 2000, &entry_.device_get);
      Resolve("cuDeviceGetAttribute", 2000, &entry_.device_get_attribute);
      Resolve("cuMemGetHandleForAddressRange", 11070, &entry_.mem_get_handle_for_address_range);
      Resolve("cuPointerSetAttribute", 6000, &entry_.pointer_set_attribute);
      Resolve("cuFlushGPUDirectRDMAWrites", 11030, &entry_.flush_gpu_direct_rdma_writes);
      Resolve("cuMemGetAddressRange", 3020, &entry_.mem_get_address_range);
    });
    return entry_;
  }

  std::once_flag resolved_;
  DriverEntryPoints entry_;
};

}  // namespace

std::unique_ptr<CudaApi> CreateRealCudaApi() { return std::make_unique<RealCudaApi>(); }

}  // namespace reelfs::cuda

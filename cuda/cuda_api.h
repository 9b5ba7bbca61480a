// CudaApi: the few CUDA runtime and driver calls reelfs makes, behind one interface.
//
// The seam between cuda/'s logic (probe, host pinning, the GPU buffer ladder) and CUDA itself:
// the real implementation (cuda_runtime_api.h, target reelfs_cuda) calls cudart_static and reaches
// the driver API through cudaGetDriverEntryPointByVersion, so nothing links libcuda and a machine
// without a driver gets error codes, not a failed start; FakeCudaApi (cuda/fake/) stands in for
// it in tests and injects failures. This header includes no CUDA header: codes are plain ints,
// the cudaError_t numbers below.
//
// Initialisation is explicit: creating an implementation calls nothing; CUDA is initialised by
// the first method call. CUDA in a forked child is undefined, so a daemon makes that first call
// after it has daemonized, never from a static initialiser.
//
// Thread-safety: implementations are safe to call from any thread (CUDA's runtime is); the
// fake is not, it is driven by one test thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace reelfs::cuda {

// cudaError_t values reelfs acts on. They are CUDA's ABI and stable across releases (the real
// implementation static_asserts them against the headers). The driver's CUresult shares these
// numbers for the codes named here.
namespace cuda_error {
inline constexpr int kSuccess = 0;
inline constexpr int kInvalidValue = 1;
inline constexpr int kMemoryAllocation = 2;
inline constexpr int kStubLibrary = 34;         // the toolkit's stub libcuda.so was loaded
inline constexpr int kInsufficientDriver = 35;  // no driver, or one older than the runtime
inline constexpr int kNoDevice = 100;           // a driver, but no visible device
inline constexpr int kSymbolNotFound = 500;     // a driver entry point this driver lacks
inline constexpr int kHostMemoryAlreadyRegistered = 712;
inline constexpr int kHostMemoryNotRegistered = 713;
inline constexpr int kInvalidResourceHandle = 400;  // e.g. a CUDA IPC handle that names nothing
inline constexpr int kNotSupported = 801;
}  // namespace cuda_error

// cudaIpcMemHandle_t: 64 opaque bytes (CUDA_IPC_HANDLE_SIZE).
using IpcHandle = std::array<uint8_t, 64>;

// The device attributes the probe reads (CU_DEVICE_ATTRIBUTE_*).
enum class DeviceAttribute : uint8_t {
  kDmaBufSupported,              // cuMemGetHandleForAddressRange can export dma-buf fds
  kGpuDirectRdmaSupported,       // nvidia-peermem style registration of device memory
  kGpuDirectRdmaWritesOrdering,  // CUGPUDirectRDMAWritesOrdering: 0 none, 100 owner, 200 all
  kHostRegisterSupported,        // cudaHostRegister works on this device
};

// CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER: at or above it, a kernel on the device sees NIC
// writes without cuFlushGPUDirectRDMAWrites.
inline constexpr int kRdmaWritesOrderingOwner = 100;

struct DeviceInfo {
  std::string name;           // "NVIDIA H200"
  std::string pci_bus_id;     // "0000:17:00.0"
  uint64_t total_memory = 0;  // bytes
};

class CudaApi {
 public:
  virtual ~CudaApi() = default;

  // cudaDriverGetVersion: 0 when no driver is installed (it succeeds then).
  virtual int DriverGetVersion(int* version) = 0;
  // cudaRuntimeGetVersion: the cudart this binary carries, e.g. 13000.
  virtual int RuntimeGetVersion(int* version) = 0;
  // cudaGetDeviceCount: kInsufficientDriver, kStubLibrary or kNoDevice without a usable GPU.
  virtual int GetDeviceCount(int* count) = 0;
  virtual int GetDeviceInfo(int device, DeviceInfo* info) = 0;
  virtual int GetDeviceAttribute(int device, DeviceAttribute attribute, int* value) = 0;

  // cudaHostRegister / cudaHostUnregister. `flags` are cudaHostRegister* flags (0: default).
  virtual int HostRegister(void* ptr, size_t size, unsigned flags) = 0;
  virtual int HostUnregister(void* ptr) = 0;
  // cudaGetLastError: returns and clears the runtime's sticky last error, which a failed call
  // leaves behind to be reported by a later, unrelated call.
  virtual int GetLastError() = 0;
  // cudaGetErrorName: "cudaErrorInsufficientDriver".
  virtual std::string ErrorName(int code) = 0;

  // Driver API, resolved through entry points on first use.
  // cuMemGetHandleForAddressRange(DMA_BUF_FD): a dma-buf fd for [device_ptr, +size), which must
  // be host-page aligned. The caller owns the fd.
  virtual int GetDmaBufFd(uint64_t device_ptr, size_t size, int* fd) = 0;
  // cuPointerSetAttribute(SYNC_MEMOPS): synchronous memops on the allocation, so a copy that
  // returned has landed before the NIC reads or writes it.
  virtual int SetSyncMemops(uint64_t device_ptr) = 0;
  // cuFlushGPUDirectRDMAWrites(current context, owner): makes NIC writes visible to the device's
  // consumers where the ordering attribute is below kRdmaWritesOrderingOwner.
  virtual int FlushGpuDirectRdmaWrites() = 0;

  // CUDA IPC: another process's allocation mapped into this one (cudaIpcOpenMemHandle with
  // cudaIpcMemLazyEnablePeerAccess, on the current device); `device_ptr` is the allocation's
  // start here. Every open is matched by one close. The first call creates this process's CUDA
  // context on the device, which costs device memory for as long as the process runs.
  virtual int IpcOpenMemHandle(const IpcHandle& handle, uint64_t* device_ptr) = 0;
  virtual int IpcCloseMemHandle(uint64_t device_ptr) = 0;
  // The allocation holding `device_ptr`: its device (cudaPointerGetAttributes) and its extent
  // (cuMemGetAddressRange).
  virtual int GetAllocation(uint64_t device_ptr, int* device, uint64_t* base, uint64_t* size) = 0;
};

}  // namespace reelfs::cuda

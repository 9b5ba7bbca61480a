// FakeCudaApi: a CudaApi with scripted devices and injectable failures, for tests of cuda/'s
// logic (and, later, of the mount's GPU wiring) on machines without a GPU.
//
// It behaves as CUDA does where reelfs depends on it: a failed call leaves a sticky last error
// until GetLastError; registering host memory that overlaps a registered range answers
// cudaErrorHostMemoryAlreadyRegistered (712); unregistering an unknown pointer 713; GetDmaBufFd
// hands out real (harmless) file descriptors, so code that closes them can be checked; a CUDA IPC
// handle opens only if it was exported (ExportIpc), a handle that names nothing answers
// cudaErrorInvalidResourceHandle (400), and opens and closes are counted. Memory is never
// touched: host ranges are only recorded.
//
// Thread-safety: none; one test thread drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_api.h"

namespace reelfs::cuda {

enum class FakeCall : uint8_t {
  kDriverGetVersion,
  kRuntimeGetVersion,
  kGetDeviceCount,
  kGetDeviceInfo,
  kGetDeviceAttribute,
  kHostRegister,
  kHostUnregister,
  kGetDmaBufFd,
  kSetSyncMemops,
  kFlushGpuDirectRdmaWrites,
  kIpcOpenMemHandle,
  kIpcCloseMemHandle,
  kGetAllocation,
};

class FakeCudaApi : public CudaApi {
 public:
  struct Device {
    DeviceInfo info{
        .name = "Fake H200", .pci_bus_id = "0000:17:00.0", .total_memory = uint64_t{141} << 30};
    int dma_buf_supported = 1;
    int gpu_direct_rdma_supported = 1;
    int rdma_writes_ordering = kRdmaWritesOrderingOwner;
    int host_register_supported = 1;
  };
  struct HostRegisterCall {
    void* ptr = nullptr;
    size_t size = 0;
    unsigned flags = 0;
  };

  // A machine with `devices` default devices, driver and runtime at CUDA 13.0.
  explicit FakeCudaApi(int devices = 1);
  FakeCudaApi(FakeCudaApi&&) = default;
  ~FakeCudaApi() override;  // closes the dma-buf fds nobody closed

  // The three machines without a usable GPU (docs/gpu.md "Probe").
  static FakeCudaApi NoDriver();     // driver version 0, cudaErrorInsufficientDriver (35)
  static FakeCudaApi StubLibrary();  // cudaErrorStubLibrary (34)
  static FakeCudaApi NoDevice();     // driver present, cudaErrorNoDevice (100)

  // The `nth` next call (1 = the very next) of `call` answers `code` instead of doing its work.
  void InjectFailure(FakeCall call, int code, int nth = 1);
  // Marks [ptr, ptr + size) as registered by someone else (the application, UCX).
  void PreRegister(void* ptr, size_t size);
  // Another process's cudaMalloc of `size` bytes on `device`, exported with cudaIpcGetMemHandle:
  // the handle to pass; it opens at `address` here.
  IpcHandle ExportIpc(int device, uint64_t address, uint64_t size);

  // Scripted state; set before use.
  int driver_version = 13000;
  int runtime_version = 13000;
  int device_count_error = cuda_error::kSuccess;  // GetDeviceCount's answer when non-zero
  std::vector<Device> devices;

  // What happened.
  int calls(FakeCall call) const;
  int sticky_error() const { return last_error_; }  // without clearing it
  const std::vector<HostRegisterCall>& host_register_calls() const { return register_calls_; }
  const std::vector<void*>& host_unregister_calls() const { return unregister_calls_; }
  size_t pinned_ranges() const { return pinned_.size(); }  // registered by successful calls
  const std::vector<int>& dma_buf_fds() const { return dma_buf_fds_; }
  int ipc_open_mappings() const { return ipc_open_; }  // opened and not yet closed

  int DriverGetVersion(int* version) override;
  int RuntimeGetVersion(int* version) override;
  int GetDeviceCount(int* count) override;
  int GetDeviceInfo(int device, DeviceInfo* info) override;
  int GetDeviceAttribute(int device, DeviceAttribute attribute, int* value) override;
  int HostRegister(void* ptr, size_t size, unsigned flags) override;
  int HostUnregister(void* ptr) override;
  int GetLastError() override;
  std::string ErrorName(int code) override;
  int GetDmaBufFd(uint64_t device_ptr, size_t size, int* fd) override;
  int SetSyncMemops(uint64_t device_ptr) override;
  int FlushGpuDirectRdmaWrites() override;
  int IpcOpenMemHandle(const IpcHandle& handle, uint64_t* device_ptr) override;
  int IpcCloseMemHandle(uint64_t device_ptr) override;
  int GetAllocation(uint64_t device_ptr, int* device, uint64_t* base, uint64_t* size) override;

 private:
  struct Allocation {
    int device = 0;
    uint64_t address = 0;
    uint64_t size = 0;
  };
  struct Injection {
    FakeCall call;
    int remaining;  // calls of `call` still to pass before it fires
    int code;
  };
  // Counts the call; the injected code (also made sticky) if one fires, else kSuccess.
  int Enter(FakeCall call);
  int Fail(int code);  // makes `code` sticky and returns it
  bool Overlaps(uintptr_t begin, size_t size) const;

  std::map<FakeCall, int> calls_;
  std::vector<Injection> injections_;
  int last_error_ = cuda_error::kSuccess;
  std::vector<HostRegisterCall> register_calls_;
  std::vector<void*> unregister_calls_;
  std::map<uintptr_t, size_t> pinned_;   // ours: start -> size
  std::map<uintptr_t, size_t> foreign_;  // PreRegister'd
  std::vector<int> dma_buf_fds_;
  std::map<IpcHandle, Allocation> exported_;
  std::map<uint64_t, int> ipc_mapped_;  // address -> opens not yet closed
  int ipc_open_ = 0;
};

}  // namespace reelfs::cuda

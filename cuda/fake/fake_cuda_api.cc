#include "cuda/fake/fake_cuda_api.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace reelfs::cuda {

FakeCudaApi::FakeCudaApi(int count) : devices(static_cast<size_t>(count)) {}

FakeCudaApi::~FakeCudaApi() {
  // An fd already closed by the code under test answers EBADF here, which is fine.
  for (const int fd : dma_buf_fds_) {
    if (fcntl(fd, F_GETFD) != -1) close(fd);
  }
}

FakeCudaApi FakeCudaApi::NoDriver() {
  FakeCudaApi api(0);
  api.driver_version = 0;
  api.device_count_error = cuda_error::kInsufficientDriver;
  return api;
}

FakeCudaApi FakeCudaApi::StubLibrary() {
  FakeCudaApi api(0);
  api.driver_version = 0;
  api.device_count_error = cuda_error::kStubLibrary;
  return api;
}

FakeCudaApi FakeCudaApi::NoDevice() {
  FakeCudaApi api(0);
  api.driver_version = 13000;
  api.device_count_error = cuda_error::kNoDevice;
  return api;
}

void FakeCudaApi::InjectFailure(FakeCall call, int code, int nth) {
  injections_.push_back({.call = call, .remaining = nth - 1, .code = code});
}

void FakeCudaApi::PreRegister(void* ptr, size_t size) {
  foreign_[reinterpret_cast<uintptr_t>(ptr)] = size;
}

int FakeCudaApi::calls(FakeCall call) const {
  const auto it = calls_.find(call);
  return it == calls_.end() ? 0 : it->second;
}

int FakeCudaApi::Fail(int code) {
  last_error_ = code;
  return code;
}

int FakeCudaApi::Enter(FakeCall call) {
  ++calls_[call];
  for (auto it = injections_.begin(); it != injections_.end(); ++it) {
    if (it->call != call) continue;
    if (it->remaining-- > 0) continue;
    const int code = it->code;
    injections_.erase(it);
    return Fail(code);
  }
  return cuda_error::kSuccess;
}

bool FakeCudaApi::Overlaps(uintptr_t begin, size_t size) const {
  for (const auto* ranges : {&pinned_, &foreign_}) {
    for (const auto& [start, length] : *ranges) {
      if (begin < start + length && start < begin + size) return true;
    }
  }
  return false;
}

int FakeCudaApi::DriverGetVersion(int* version) {
  if (const int code = Enter(FakeCall::kDriverGetVersion)) return code;
  *version = driver_version;
  return cuda_error::kSuccess;
}

int FakeCudaApi::RuntimeGetVersion(int* version) {
  if (const int code = Enter(FakeCall::kRuntimeGetVersion)) return code;
  *version = runtime_version;
  return cuda_error::kSuccess;
}

int FakeCudaApi::GetDeviceCount(int* count) {
  if (const int code = Enter(FakeCall::kGetDeviceCount)) return code;
  if (device_count_error != cuda_error::kSuccess) return Fail(device_count_error);
  *count = static_cast<int>(devices.size());
  return cuda_error::kSuccess;
}

int FakeCudaApi::GetDeviceInfo(int device, DeviceInfo* info) {
  if (const int code = Enter(FakeCall::kGetDeviceInfo)) return code;
  if (device < 0 || static_cast<size_t>(device) >= devices.size()) {
    return Fail(cuda_error::kInvalidValue);
  }
  *info = devices[static_cast<size_t>(device)].info;
  return cuda_error::kSuccess;
}

int FakeCudaApi::GetDeviceAttribute(int device, DeviceAttribute attribute, int* value) {
  if (const int code = Enter(FakeCall::kGetDeviceAttribute)) return code;
  if (device < 0 || static_cast<size_t>(device) >= devices.size()) {
    return Fail(cuda_error::kInvalidValue);
  }
  const Device& d = devices[static_cast<size_t>(device)];
  switch (attribute) {
    case DeviceAttribute::kDmaBufSupported:
      *value = d.dma_buf_supported;
      break;
    case DeviceAttribute::kGpuDirectRdmaSupported:
      *value = d.gpu_direct_rdma_supported;
      break;
    case DeviceAttribute::kGpuDirectRdmaWritesOrdering:
      *value = d.rdma_writes_ordering;
      break;
    case DeviceAttribute::kHostRegisterSupported:
      *value = d.host_register_supported;
      break;
  }
  return cuda_error::kSuccess;
}

int FakeCudaApi::HostRegister(void* ptr, size_t size, unsigned flags) {
  register_calls_.push_back({.ptr = ptr, .size = size, .flags = flags});
  if (const int code = Enter(FakeCall::kHostRegister)) return code;
  if (device_count_error != cuda_error::kSuccess) return Fail(device_count_error);
  if (ptr == nullptr || size == 0) return Fail(cuda_error::kInvalidValue);
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  if (Overlaps(begin, size)) return Fail(cuda_error::kHostMemoryAlreadyRegistered);
  pinned_[begin] = size;
  return cuda_error::kSuccess;
}

int FakeCudaApi::HostUnregister(void* ptr) {
  unregister_calls_.push_back(ptr);
  if (const int code = Enter(FakeCall::kHostUnregister)) return code;
  if (pinned_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return Fail(cuda_error::kHostMemoryNotRegistered);
  }
  return cuda_error::kSuccess;
}

int FakeCudaApi::GetLastError() {
  const int code = last_error_;
  last_error_ = cuda_error::kSuccess;
  return code;
}

std::string FakeCudaApi::ErrorName(int code) {
  switch (code) {
    case cuda_error::kSuccess:
      return "cudaSuccess";
    case cuda_error::kInvalidValue:
      return "cudaErrorInvalidValue";
    case cuda_error::kMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cuda_error::kStubLibrary:
      return "cudaErrorStubLibrary";
    case cuda_error::kInsufficientDriver:
      return "cudaErrorInsufficientDriver";
    case cuda_error::kNoDevice:
      return "cudaErrorNoDevice";
    case cuda_error::kSymbolNotFound:
      return "cudaErrorSymbolNotFound";
    case cuda_error::kHostMemoryAlreadyRegistered:
      return "cudaErrorHostMemoryAlreadyRegistered";
    case cuda_error::kHostMemoryNotRegistered:
      return "cudaErrorHostMemoryNotRegistered";
    case cuda_error::kNotSupported:
      return "cudaErrorNotSupported";
    default:
      return fmt::format("cudaError{}", code);
  }
}

int FakeCudaApi::GetDmaBufFd(uint64_t device_ptr, size_t size, int* fd) {
  if (const int code = Enter(FakeCall::kGetDmaBufFd)) return code;
  if (device_ptr == 0 || size == 0) return Fail(cuda_error::kInvalidValue);
  *fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return Fail(cuda_error::kMemoryAllocation);
  dma_buf_fds_.push_back(*fd);
  return cuda_error::kSuccess;
}

int FakeCudaApi::SetSyncMemops(uint64_t device_ptr) {
  if (const int code = Enter(FakeCall::kSetSyncMemops)) return code;
  return device_ptr == 0 ? Fail(cuda_error::kInvalidValue) : cuda_error::kSuccess;
}

int FakeCudaApi::FlushGpuDirectRdmaWrites() { return Enter(FakeCall::kFlushGpuDirectRdmaWrites); }

IpcHandle FakeCudaApi::ExportIpc(int device, uint64_t address, uint64_t size) {
  IpcHandle handle{};
  handle[0] = static_cast<uint8_t>(exported_.size() + 1);  // distinct per export
  handle[1] = 0xc1;
  exported_[handle] = Allocation{.device = device, .address = address, .size = size};
  return handle;
}

int FakeCudaApi::IpcOpenMemHandle(const IpcHandle& handle, uint64_t* device_ptr) {
  if (const int code = Enter(FakeCall::kIpcOpenMemHandle)) return code;
  const auto it = exported_.find(handle);
  if (it == exported_.end()) return Fail(cuda_error::kInvalidResourceHandle);
  *device_ptr = it->second.address;
  ++ipc_mapped_[it->second.address];
  ++ipc_open_;
  return cuda_error::kSuccess;
}

int FakeCudaApi::IpcCloseMemHandle(uint64_t device_ptr) {
  if (const int code = Enter(FakeCall::kIpcCloseMemHandle)) return code;
  const auto it = ipc_mapped_.find(device_ptr);
  if (it == ipc_mapped_.end()) return Fail(cuda_error::kInvalidValue);
  if (--it->second == 0) ipc_mapped_.erase(it);
  --ipc_open_;
  return cuda_error::kSuccess;
}

int FakeCudaApi::GetAllocation(uint64_t device_ptr, int* device, uint64_t* base, uint64_t* size) {
  if (const int code = Enter(FakeCall::kGetAllocation)) return code;
  for (const auto& [handle, a] : exported_) {
    if (device_ptr >= a.address && device_ptr - a.address < a.size) {
      *device = a.device;
      *base = a.address;
      *size = a.size;
      return cuda_error::kSuccess;
    }
  }
  return Fail(cuda_error::kInvalidValue);
}

}  // namespace reelfs::cuda

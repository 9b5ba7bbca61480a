#include "cuda/probe.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <sys/stat.h>

namespace reelfs::cuda {
namespace {

std::string ReadFile(const std::string& path, bool* found) {
  std::ifstream in(path);
  *found = static_cast<bool>(in);
  if (!*found) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

std::string_view FirstLine(std::string_view text) {
  const size_t end = text.find('\n');
  return end == std::string_view::npos ? text : text.substr(0, end);
}

// The one line for a failed cudaGetDeviceCount, by code: what is missing and what to do.
std::string NoGpuLine(CudaApi& api, int code, int driver_version, int runtime_version) {
  switch (code) {
    case cuda_error::kInsufficientDriver:
      if (driver_version == 0) {
        return "no NVIDIA driver (cudaErrorInsufficientDriver, 35): GPU landing is off; reads "
               "land in host memory";
      }
      return fmt::format(
          "the NVIDIA driver supports CUDA {} but this binary's runtime needs {} "
          "(cudaErrorInsufficientDriver, 35): update the driver; GPU landing is off",
          FormatCudaVersion(driver_version), FormatCudaVersion(runtime_version));
    case cuda_error::kStubLibrary:
      return "the CUDA toolkit's stub libcuda.so was loaded instead of a driver "
             "(cudaErrorStubLibrary, 34): remove .../stubs from the library path; GPU landing "
             "is off";
    case cuda_error::kNoDevice:
      return fmt::format(
          "the NVIDIA driver (CUDA {}) sees no CUDA device (cudaErrorNoDevice, 100): check "
          "CUDA_VISIBLE_DEVICES and the container's /dev/nvidia* nodes; GPU landing is off",
          FormatCudaVersion(driver_version));
    default:
      return fmt::format("cudaGetDeviceCount failed: {} ({}); GPU landing is off",
                         api.ErrorName(code), code);
  }
}

// An attribute the device cannot report counts as unsupported: the ladder then steps past it.
int AttributeOr0(CudaApi& api, int device, DeviceAttribute attribute) {
  int value = 0;
  if (api.GetDeviceAttribute(device, attribute, &value) != cuda_error::kSuccess) {
    (void)api.GetLastError();  // do not leave the failure to be reported by a later call
    return 0;
  }
  return value;
}

}  // namespace

std::string_view KernelModuleName(KernelModule module) {
  switch (module) {
    case KernelModule::kNone:
      return "none";
    case KernelModule::kOpen:
      return "open";
    case KernelModule::kProprietary:
      return "proprietary";
  }
  return "none";
}

KernelModule ParseKernelModule(std::string_view nvidia_version_text) {
  const std::string_view line = FirstLine(nvidia_version_text);
  if (line.find("NVRM version") == std::string_view::npos) return KernelModule::kNone;
  return line.find("Open Kernel Module") != std::string_view::npos ? KernelModule::kOpen
                                                                   : KernelModule::kProprietary;
}

bool ModulesListPeermem(std::string_view proc_modules_text) {
  // Each line starts with the module name and a space; match the whole name only.
  constexpr std::string_view kName = "nvidia_peermem ";
  size_t pos = 0;
  while (pos < proc_modules_text.size()) {
    const std::string_view line = FirstLine(proc_modules_text.substr(pos));
    if (line.starts_with(kName)) return true;
    pos += line.size() + 1;
  }
  return false;
}

HostFacts ReadHostFacts(const HostPaths& paths) {
  HostFacts facts;
  bool found = false;
  const std::string version = ReadFile(paths.nvidia_version, &found);
  if (found) {
    facts.kernel_module = ParseKernelModule(version);
    facts.nvrm_version = std::string(FirstLine(version));
  }
  struct stat st {};
  facts.peermem_loaded = stat(paths.peermem_module.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!facts.peermem_loaded) {
    const std::string modules = ReadFile(paths.modules, &found);
    facts.peermem_loaded = found && ModulesListPeermem(modules);
  }
  return facts;
}

GpuProbe Probe(CudaApi& api, const HostFacts& host) {
  GpuProbe probe;
  probe.host = host;
  // Both succeed without a driver (the driver version is then 0); a failure leaves them 0.
  if (api.DriverGetVersion(&probe.driver_version) != cuda_error::kSuccess) {
    probe.driver_version = 0;
    (void)api.GetLastError();
  }
  if (api.RuntimeGetVersion(&probe.runtime_version) != cuda_error::kSuccess) {
    probe.runtime_version = 0;
    (void)api.GetLastError();
  }
  int count = 0;
  const int code = api.GetDeviceCount(&count);
  if (code != cuda_error::kSuccess) {
    (void)api.GetLastError();
    probe.error = NoGpuLine(api, code, probe.driver_version, probe.runtime_version);
    probe.error_code = code;
    return probe;
  }
  for (int i = 0; i < count; ++i) {
    GpuDevice device{.index = i};
    if (api.GetDeviceInfo(i, &device.info) != cuda_error::kSuccess) (void)api.GetLastError();
    device.dma_buf_supported = AttributeOr0(api, i, DeviceAttribute::kDmaBufSupported) != 0;
    device.gpu_direct_rdma_supported =
        AttributeOr0(api, i, DeviceAttribute::kGpuDirectRdmaSupported) != 0;
    device.rdma_writes_ordering =
        AttributeOr0(api, i, DeviceAttribute::kGpuDirectRdmaWritesOrdering);
    device.host_register_supported =
        AttributeOr0(api, i, DeviceAttribute::kHostRegisterSupported) != 0;
    probe.devices.push_back(std::move(device));
  }
  if (probe.devices.empty()) {
    probe.error = "cudaGetDeviceCount reports 0 devices; GPU landing is off";
  }
  return probe;
}

std::string FormatCudaVersion(int version) {
  if (version <= 0) return "none";
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

Json ToJson(const GpuProbe& probe) {
  Json doc = Json::object();
  doc["usable"] = probe.usable();
  if (!probe.error.empty()) {
    doc["error"] = probe.error;
    doc["error_code"] = probe.error_code;
  }
  doc["driver_cuda_version"] = FormatCudaVersion(probe.driver_version);
  doc["runtime_cuda_version"] = FormatCudaVersion(probe.runtime_version);
  doc["kernel_module"] = std::string(KernelModuleName(probe.host.kernel_module));
  doc["nvrm_version"] = probe.host.nvrm_version;
  doc["nvidia_peermem"] = probe.host.peermem_loaded;
  Json devices = Json::array();
  for (const GpuDevice& d : probe.devices) {
    Json dev = Json::object();
    dev["index"] = d.index;
    dev["name"] = d.info.name;
    dev["pci_bus_id"] = d.info.pci_bus_id;
    dev["total_memory"] = d.info.total_memory;
    dev["dma_buf"] = d.dma_buf_supported;
    dev["gpu_direct_rdma"] = d.gpu_direct_rdma_supported;
    dev["rdma_writes_ordering"] = d.rdma_writes_ordering;
    dev["host_register"] = d.host_register_supported;
    devices.push_back(std::move(dev));
  }
  doc["devices"] = std::move(devices);
  return doc;
}

std::string Summary(const GpuProbe& probe) {
  if (!probe.usable()) return probe.error.empty() ? "no CUDA device" : probe.error;
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::string line =
      fmt::format("{} GPU{}:", probe.devices.size(), probe.devices.size() == 1 ? "" : "s");
  for (const GpuDevice& d : probe.devices) {
    line += fmt::format(" {} {} (dma-buf {}, GPUDirect RDMA {}, host register {});", d.index,
                        d.info.name, yes(d.dma_buf_supported), yes(d.gpu_direct_rdma_supported),
                        yes(d.host_register_supported));
  }
  line += fmt::format(" kernel module {}, nvidia_peermem {}; CUDA driver {}, runtime {}",
                      KernelModuleName(probe.host.kernel_module),
                      probe.host.peermem_loaded ? "loaded" : "not loaded",
                      FormatCudaVersion(probe.driver_version),
                      FormatCudaVersion(probe.runtime_version));
  return line;
}

}  // namespace reelfs::cuda

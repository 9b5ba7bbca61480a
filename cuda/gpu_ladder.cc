#include "cuda/gpu_ladder.h"

#include <unistd.h>

#include <utility>
#include <variant>

#include <fmt/format.h>

#include "common/log.h"
#include "common/unique_fd.h"
#include "cuda/cuda_status.h"

namespace reelfs::cuda {
namespace {

// A rung's attempt: the landing's pieces when it worked, else the reason it did not.
struct Attempt {
  std::string reason;  // empty: the rung works
  // In acquisition order, as in GpuLanding: the registration is released before the pin.
  std::optional<PinnedHostRange> pin;
  std::shared_ptr<rdmaio::RegisteredRegion> region;

  static Attempt No(std::string why) { return {.reason = std::move(why)}; }
};

std::string DeviceLabel(const GpuDevice& device) {
  return device.info.name.empty() ? fmt::format("GPU {}", device.index)
                                  : fmt::format("GPU {} ({})", device.index, device.info.name);
}

// What every GPU rung needs first: a usable probe that lists the buffer's device.
const GpuDevice* FindDevice(const GpuProbe& probe, int index, std::string* why) {
  if (!probe.usable()) {
    *why = "no usable GPU: " + probe.error;
    return nullptr;
  }
  for (const GpuDevice& device : probe.devices) {
    if (device.index == index) return &device;
  }
  *why = fmt::format("GPU {} is not among the {} devices probed", index, probe.devices.size());
  return nullptr;
}

// "call: cudaErrorNotSupported (801)", after clearing the sticky error the call left.
std::string CudaReason(CudaApi& api, int code, std::string_view call) {
  (void)api.GetLastError();
  return std::string(CudaToStatus(api, code, call).message());
}

std::string FailedRegistration(std::string_view what, const Status& status) {
  if (status.code() == StatusCode::kUnimplemented) {
    return fmt::format("the RDMA device cannot register {}: {}", what, status.message());
  }
  return fmt::format("registering {} failed: {}", what, status.ToString());
}

Attempt TryDmaBuf(CudaApi& api, const GpuProbe& probe, rdmaio::MemoryRegistrar* registrar,
                  const GpuBuffer& buffer, const LadderOptions& options) {
  if (!options.dma_buf) return Attempt::No("turned off (LadderOptions::dma_buf)");
  std::string why;
  const GpuDevice* device = FindDevice(probe, buffer.device, &why);
  if (device == nullptr) return Attempt::No(std::move(why));
  if (!device->dma_buf_supported) {
    return Attempt::No(DeviceLabel(*device) + " does not report DMA_BUF_SUPPORTED");
  }
  if (probe.host.kernel_module != KernelModule::kOpen) {
    return Attempt::No(
        fmt::format("dma-buf export needs NVIDIA's open kernel module; the loaded one is {}",
                    KernelModuleName(probe.host.kernel_module)));
  }
  if (registrar == nullptr) return Attempt::No("no RDMA device to register the buffer with");
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (buffer.length == 0 || buffer.address % page != 0 || buffer.length % page != 0) {
    return Attempt::No(fmt::format("the buffer ({} bytes at {:#x}) is not host-page aligned",
                                   buffer.length, buffer.address));
  }
  int raw_fd = -1;
  const int code = api.GetDmaBufFd(buffer.address, buffer.length, &raw_fd);
  if (code != cuda_error::kSuccess) {
    return Attempt::No(CudaReason(api, code, "cuMemGetHandleForAddressRange"));
  }
  // The registrar borrows the fd; the registration keeps the dma-buf alive after it is closed.
  const UniqueFd fd(raw_fd);
  auto region = registrar->Register(rdmaio::DmaBufMemory{
      .fd = fd.get(), .offset = 0, .length = buffer.length, .iova = buffer.address});
  if (!region.ok()) return Attempt::No(FailedRegistration("a dma-buf", region.status()));
  return {.region = std::move(region).value()};
}

Attempt TryPeerMem(CudaApi& api, const GpuProbe& probe, rdmaio::MemoryRegistrar* registrar,
                   const GpuBuffer& buffer, const LadderOptions& options) {
  if (!options.peermem) return Attempt::No("turned off (LadderOptions::peermem)");
  std::string why;
  const GpuDevice* device = FindDevice(probe, buffer.device, &why);
  if (device == nullptr) return Attempt::No(std::move(why));
  if (!device->gpu_direct_rdma_supported) {
    return Attempt::No(DeviceLabel(*device) + " does not report GPU_DIRECT_RDMA_SUPPORTED");
  }
  if (!probe.host.peermem_loaded) return Attempt::No("the nvidia_peermem module is not loaded");
  if (registrar == nullptr) return Attempt::No("no RDMA device to register the buffer with");
  if (buffer.address == 0 || buffer.length == 0) return Attempt::No("the buffer is empty");
  // GPUDirect RDMA's rule: synchronous memops on the buffer, so a cudaMemcpy that returned has
  // landed before the NIC touches the same memory.
  const int code = api.SetSyncMemops(buffer.address);
  if (code != cuda_error::kSuccess) {
    return Attempt::No(CudaReason(api, code, "cuPointerSetAttribute(SYNC_MEMOPS)"));
  }
  auto region =
      registrar->Register(rdmaio::DeviceMemory{.address = buffer.address, .length = buffer.length});
  if (!region.ok()) return Attempt::No(FailedRegistration("the device VA", region.status()));
  return {.region = std::move(region).value()};
}

Attempt TryHostStaging(CudaApi& api, const GpuProbe& probe, rdmaio::MemoryRegistrar* registrar,
                       const GpuBuffer& buffer, std::span<std::byte> staging,
                       const LadderOptions& options) {
  if (!options.host_staging) return Attempt::No("turned off (LadderOptions::host_staging)");
  std::string why;
  const GpuDevice* device = FindDevice(probe, buffer.device, &why);
  if (device == nullptr) return Attempt::No(std::move(why));
  if (!device->host_register_supported) {
    return Attempt::No(DeviceLabel(*device) + " does not report HOST_REGISTER_SUPPORTED");
  }
  if (registrar == nullptr) return Attempt::No("no RDMA device to register the buffer with");
  if (staging.empty()) return Attempt::No("no host staging buffer was given");
  auto pin = PinnedHostRange::Pin(api, staging, options.pin);
  if (!pin.ok()) return Attempt::No(std::string(pin.status().message()));
  auto region = registrar->Register(rdmaio::HostMemory{.bytes = staging});
  // On failure `pin` goes out of scope here and unpins the staging buffer again.
  if (!region.ok()) return Attempt::No(FailedRegistration("the staging buffer", region.status()));
  return {.pin = std::move(pin).value(), .region = std::move(region).value()};
}

}  // namespace

std::string_view RungName(Rung rung) {
  switch (rung) {
    case Rung::kDmaBuf:
      return "dma-buf";
    case Rung::kPeerMem:
      return "nvidia-peermem";
    case Rung::kHostStaging:
      return "host-staging";
    case Rung::kPread:
      return "pread";
  }
  return "pread";
}

GpuLanding ChooseLanding(CudaApi& api, const GpuProbe& probe, rdmaio::MemoryRegistrar* registrar,
                         const GpuBuffer& buffer, std::span<std::byte> staging,
                         const LadderOptions& options) {
  GpuLanding landing;
  auto step_down = [&](Rung from, Rung to, std::string reason) {
    REELFS_LOG_INFO("cuda",
                    "GPU buffer ({} bytes at {:#x} on GPU {}): {} unavailable: {}; "
                    "trying {}",
                    buffer.length, buffer.address, buffer.device, RungName(from), reason,
                    RungName(to));
    landing.step_downs.push_back({.from = from, .reason = std::move(reason)});
  };

  // Rungs 1-3 in order; landing.rung stays kPread when none works.
  for (const Rung rung : {Rung::kDmaBuf, Rung::kPeerMem, Rung::kHostStaging}) {
    Attempt attempt;
    switch (rung) {
      case Rung::kDmaBuf:
        attempt = TryDmaBuf(api, probe, registrar, buffer, options);
        break;
      case Rung::kPeerMem:
        attempt = TryPeerMem(api, probe, registrar, buffer, options);
        break;
      default:
        attempt = TryHostStaging(api, probe, registrar, buffer, staging, options);
        break;
    }
    if (attempt.reason.empty()) {
      landing.rung = rung;
      landing.staging_pin = std::move(attempt.pin);
      landing.region = std::move(attempt.region);
      break;
    }
    step_down(rung, static_cast<Rung>(static_cast<int>(rung) + 1), std::move(attempt.reason));
  }
  if (landing.rung == Rung::kDmaBuf || landing.rung == Rung::kPeerMem) {
    const GpuDevice* device = nullptr;
    for (const GpuDevice& d : probe.devices) {
      if (d.index == buffer.device) device = &d;
    }
    landing.needs_flush =
        device != nullptr && device->rdma_writes_ordering < kRdmaWritesOrderingOwner;
  }
  REELFS_LOG_DEBUG("cuda", "GPU buffer ({} bytes at {:#x}): landing on {}", buffer.length,
                   buffer.address, RungName(landing.rung));
  return landing;
}

}  // namespace reelfs::cuda

// reelfs-gpu-rdma-smoke: GPU memory registered with an RDMA NIC through the GPU buffer ladder
// (cuda/gpu_ladder.h), then written and read by the NIC over a real RC connection: the check
// behind `ctest -L gpu_rdma` (docs/gpu.md), for a machine with both an NVIDIA GPU and an RDMA
// NIC. No CI machine has both; there it prints why and exits 77.
//
// A server and a client in one process, as reelfs-rdma-smoke (tests/rdma/rdma_smoke.cc):
//   1. the client cudaMallocs a window on the GPU and lands it through the ladder with the host
//      staging rung off: dma-buf, else nvidia-peermem; each rung passed over is printed with its
//      reason, and a machine where neither registers GPU memory skips (77) with those reasons;
//   2. the server RDMA-WRITEs 6 MiB of patterned data into the GPU window (the last write
//      carrying an immediate); the client flushes GPUDirect RDMA writes where the device's write
//      ordering asks for it, copies the window back with cudaMemcpy and checks every byte;
//   3. the client fills the window with another pattern (cudaMemcpy), the server RDMA-READs 1 MiB
//      from its middle and checks it: the NIC reads GPU memory as well as it writes it.
//
// Usage: reelfs-gpu-rdma-smoke --ip ADDRESS [--device NAME] [--gpu N]
// Exits 0 on success, 1 on a failed check, 77 (skip) without a usable GPU, an active RDMA port,
// an address, or a rung that registers GPU memory, printing why.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cuda/gpu_ladder.h"
#include "cuda/probe.h"
#include "cuda/real_cuda_api.h"
#include "rdmaio/verbs/rc_connection.h"
#include "rdmaio/verbs/registrar.h"
#include "rdmaio/verbs/verbs_status.h"
#include "tests/rdma/smoke_util.h"

namespace {

using namespace reelfs;                 // NOLINT(google-build-using-namespace): test binary
using namespace reelfs::rdmaio::verbs;  // NOLINT(google-build-using-namespace)
using namespace reelfs::rdma_smoke;     // NOLINT(google-build-using-namespace)

constexpr size_t kWindow = size_t{6} << 20;
constexpr size_t kChunk = size_t{1} << 20;
constexpr size_t kReadBack = size_t{1} << 20;
constexpr size_t kReadOffset = kWindow / 2 - kReadBack / 2;
constexpr uint32_t kCookie = 0x5eed6a11;
constexpr std::chrono::milliseconds kStepTimeout{30000};
constexpr size_t kSecondPatternShift = 7;  // step 3's bytes differ from step 2's

// cudaMalloc'd memory, freed by its owner.
class DeviceAllocation {
 public:
  static DeviceAllocation Allocate(size_t bytes) {
    DeviceAllocation a;
    const cudaError_t err = cudaMalloc(&a.ptr_, bytes);
    if (err != cudaSuccess) {
      std::printf("FAIL cudaMalloc(%zu): %s\n", bytes, cudaGetErrorName(err));
      std::exit(1);
    }
    return a;
  }
  DeviceAllocation(DeviceAllocation&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  DeviceAllocation& operator=(DeviceAllocation&&) = delete;
  ~DeviceAllocation() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  void* get() const { return ptr_; }
  uint64_t address() const { return reinterpret_cast<uint64_t>(ptr_); }

 private:
  DeviceAllocation() = default;
  void* ptr_ = nullptr;
};

void NeedCuda(cudaError_t err, const char* what) {
  Need(err == cudaSuccess ? Status::Ok()
                          : Status::Internal(fmt::format("{}: {}", what, cudaGetErrorName(err))),
       what);
}

int Run(const std::string& ip, const std::string& device, int gpu) {
  std::unique_ptr<cuda::CudaApi> api = cuda::CreateRealCudaApi();
  const cuda::GpuProbe probe = cuda::Probe(*api, cuda::ReadHostFacts());
  if (!probe.usable()) {
    std::printf("skip: no usable GPU: %s\n", probe.error.c_str());
    return 77;
  }
  std::printf("%s\n", cuda::Summary(probe).c_str());
  std::optional<DevicePort> port = PortToTest(device, ip);
  if (!port) return 77;
  NeedCuda(cudaSetDevice(gpu), "cudaSetDevice");

  const auto t0 = std::chrono::steady_clock::now();
  auto listener = Need(RcListener::Listen(ip, 0), "listen");
  auto server_pd = Need(ProtectionDomain::OnContext(listener->context()), "server PD");
  auto connector = Need(RcConnector::Resolve(ip, listener->port(), kStepTimeout), "resolve");
  auto client_pd = Need(ProtectionDomain::OnContext(connector->context()), "client PD");
  VerbsRegistrar client_registrar(client_pd);

  // 1. The GPU window, landed by the ladder's RDMA rungs only.
  DeviceAllocation window = DeviceAllocation::Allocate(kWindow);
  cuda::LadderOptions options;
  options.host_staging = false;
  cuda::GpuLanding landing = cuda::ChooseLanding(
      *api, probe, &client_registrar, cuda::GpuBuffer{gpu, window.address(), kWindow}, {}, options);
  for (const cuda::StepDown& step : landing.step_downs) {
    std::printf("rung %s passed over: %s\n", std::string(cuda::RungName(step.from)).c_str(),
                step.reason.c_str());
  }
  auto* region = dynamic_cast<VerbsRegion*>(landing.region.get());
  if (landing.rung == cuda::Rung::kPread || region == nullptr) {
    std::printf("skip: neither dma-buf nor nvidia-peermem registers GPU %d's memory with %s\n", gpu,
                port->device.c_str());
    return 77;
  }
  Check(true, fmt::format("GPU window of {} MiB registered through rung {}{}", kWindow >> 20,
                          cuda::RungName(landing.rung),
                          landing.needs_flush ? " (writes need a flush)" : ""));
  Advert advert{
      .addr = region->remote_addr(), .length = region->length(), .rkey = region->rkey(), .pad = 0};
  std::span<const uint8_t> private_data(reinterpret_cast<const uint8_t*>(&advert), sizeof(advert));
  // Accepted only now: a skip above must not leave an Accept waiting out its timeout.
  auto accepted =
      std::async(std::launch::async, [&] { return listener->Accept(server_pd, {}, kStepTimeout); });
  auto client = Need(
      RcConnector::Connect(std::move(connector), client_pd, private_data, kStepTimeout), "connect");
  auto server = Need(accepted.get(), "accept");
  Check(true, fmt::format("RC connection established in {:.0f} ms", Ms(t0)));

  // 2. The NIC writes the GPU window.
  VerbsRegistrar server_registrar(server_pd);
  auto source = Need(server_registrar.AllocateArena(kWindow), "server source");
  auto back = Need(server_registrar.AllocateArena(kReadBack), "server read-back");
  std::span<std::byte> src = source->host_bytes();
  FillPattern(src);
  auto t1 = std::chrono::steady_clock::now();
  Need(client->PostRecv(99), "post recv");
  for (size_t off = 0; off < kWindow; off += kChunk) {
    Need(server->PostWrite({src.subspan(off, kChunk), source->lkey()}, advert.addr + off,
                           advert.rkey, off / kChunk),
         "post write");
  }
  Need(server->PostWriteWithImm({{}, source->lkey()}, advert.addr, advert.rkey, kCookie, 1000),
       "post write with imm");
  ibv_wc recv = Need(client->WaitCompletion(kStepTimeout), "client completion");
  Check(recv.status == IBV_WC_SUCCESS && recv.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
        fmt::format("client got the immediate ({})", ibv_wc_status_str(recv.status)));
  for (size_t n = 0; n <= kWindow / kChunk; ++n) {
    ibv_wc wc = Need(server->WaitCompletion(kStepTimeout), "server completion");
    Need(WcToStatus(wc, "server WRITE"), "server WRITE completion");
  }
  const double write_ms = Ms(t1);
  if (landing.needs_flush) {
    const int err = api->FlushGpuDirectRdmaWrites();
    Check(err == cuda::cuda_error::kSuccess,
          fmt::format("cuFlushGPUDirectRDMAWrites: {}", api->ErrorName(err)));
  }
  std::vector<std::byte> copied(kWindow);
  NeedCuda(cudaMemcpy(copied.data(), window.get(), kWindow, cudaMemcpyDeviceToHost),
           "cudaMemcpy D2H");
  const size_t bad = FirstMismatch(copied);
  Check(bad == kWindow, fmt::format("{} MiB RDMA-written into GPU memory in {:.0f} ms, every byte "
                                    "verified after a copy back{}",
                                    kWindow >> 20, write_ms,
                                    bad == kWindow ? "" : fmt::format(" (first bad {})", bad)));

  // 3. The NIC reads the GPU window.
  FillPattern(copied, kSecondPatternShift);
  NeedCuda(cudaMemcpy(window.get(), copied.data(), kWindow, cudaMemcpyHostToDevice),
           "cudaMemcpy H2D");
  t1 = std::chrono::steady_clock::now();
  Need(server->PostRead({back->host_bytes(), back->lkey()}, advert.addr + kReadOffset, advert.rkey,
                        2000),
       "post read");
  ibv_wc rd = Need(server->WaitCompletion(kStepTimeout), "read completion");
  Need(WcToStatus(rd, "server READ"), "server READ completion");
  const size_t bad_read = FirstMismatch(back->host_bytes(), kReadOffset + kSecondPatternShift);
  Check(bad_read == kReadBack,
        fmt::format("{} MiB RDMA-read from the middle of the GPU window in {:.0f} ms, every byte "
                    "verified{}",
                    kReadBack >> 20, Ms(t1),
                    bad_read == kReadBack ? "" : fmt::format(" (first bad {})", bad_read)));

  std::printf("%s: %d failure(s), rung %s, %.0f ms\n", Failures() == 0 ? "PASS" : "FAIL",
              Failures(), std::string(cuda::RungName(landing.rung)).c_str(), Ms(t0));
  return Failures() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ip;
  std::string device;
  int gpu = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ip") == 0) ip = argv[i + 1];
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    if (std::strcmp(argv[i], "--gpu") == 0) gpu = std::atoi(argv[i + 1]);
  }
  return Run(ip, device, gpu);
}

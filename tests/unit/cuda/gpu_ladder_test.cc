// cuda/gpu_ladder.h: every rung, and every reason for stepping down from each, against
// FakeCudaApi, fake probes and a fake registrar.
#include "cuda/gpu_ladder.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <sys/mman.h>

#include "common/log.h"
#include "cuda/fake/fake_cuda_api.h"
#include "tests/unit/cuda/fake_registrar.h"

namespace reelfs::cuda {
namespace {

using testing::FakeRegistrar;

constexpr uint64_t kGpuVa = uint64_t{0x7f00} << 32;  // page-aligned, as cudaMalloc's are
constexpr uint64_t kLength = 64 * 4096;

// Page-aligned host memory for the staging rung.
struct PageBuffer {
  explicit PageBuffer(size_t size) : size(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    data = static_cast<std::byte*>(p);
  }
  ~PageBuffer() { munmap(data, size); }
  std::span<std::byte> span() const { return {data, size}; }
  std::byte* data = nullptr;
  size_t size;
};

const HostFacts kEverything{.kernel_module = KernelModule::kOpen, .peermem_loaded = true};
const GpuBuffer kBuffer{.device = 0, .address = kGpuVa, .length = kLength};

// One machine and its answers; each test changes what it is about.
struct Bench {
  FakeCudaApi api{1};
  HostFacts host = kEverything;
  FakeRegistrar registrar;
  bool has_registrar = true;
  PageBuffer staging{16 * 4096};
  bool has_staging = true;
  LadderOptions options{.pin = {.advise_hugepages = false}};
  GpuBuffer buffer = kBuffer;

  GpuLanding Choose() {
    const GpuProbe probe = Probe(api, host);
    return ChooseLanding(api, probe, has_registrar ? &registrar : nullptr, buffer,
                         has_staging ? staging.span() : std::span<std::byte>(), options);
  }
};

bool Has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("RungName") {
  CHECK(RungName(Rung::kDmaBuf) == "dma-buf");
  CHECK(RungName(Rung::kPeerMem) == "nvidia-peermem");
  CHECK(RungName(Rung::kHostStaging) == "host-staging");
  CHECK(RungName(Rung::kPread) == "pread");
}

TEST_CASE("rung 1: dma-buf exported, imported, its fd closed after registration") {
  Bench bench;
  const GpuLanding landing = bench.Choose();
  CHECK(landing.rung == Rung::kDmaBuf);
  CHECK(landing.step_downs.empty());
  REQUIRE(landing.region != nullptr);
  CHECK(landing.region->kind() == rdmaio::MemoryKind::kDmaBuf);
  CHECK_FALSE(landing.staging_pin.has_value());
  CHECK_FALSE(landing.needs_flush);  // the fake orders writes for the owner
  REQUIRE(bench.registrar.seen.size() == 1);
  const auto& dmabuf = std::get<rdmaio::DmaBufMemory>(bench.registrar.seen[0]);
  CHECK(dmabuf.offset == 0);
  CHECK(dmabuf.length == kLength);
  CHECK(dmabuf.iova == kGpuVa);  // tokens name the device VA
  CHECK(bench.registrar.dma_buf_fd_was_open);
  REQUIRE(bench.api.dma_buf_fds().size() == 1);
  CHECK(fcntl(bench.api.dma_buf_fds()[0], F_GETFD) == -1);  // closed by the ladder
}

TEST_CASE("a device without write ordering for its owner needs a flush") {
  Bench bench;
  bench.api.devices[0].rdma_writes_ordering = 0;
  CHECK(bench.Choose().needs_flush);
  bench.options.dma_buf = false;
  const GpuLanding peermem = bench.Choose();
  CHECK(peermem.rung == Rung::kPeerMem);
  CHECK(peermem.needs_flush);
}

TEST_CASE("every reason to step down from dma-buf, one line each, then nvidia-peermem") {
  struct Row {
    std::string name;
    std::function<void(Bench&)> setup;
    std::vector<std::string_view> says;
  };
  const Row rows[] = {
      {"turned off", [](Bench& b) { b.options.dma_buf = false; }, {"turned off"}},
      {"attribute",
       [](Bench& b) { b.api.devices[0].dma_buf_supported = 0; },
       {"GPU 0 (Fake H200) does not report DMA_BUF_SUPPORTED"}},
      {"proprietary module",
       [](Bench& b) { b.host.kernel_module = KernelModule::kProprietary; },
       {"needs NVIDIA's open kernel module; the loaded one is proprietary"}},
      {"no module",
       [](Bench& b) { b.host.kernel_module = KernelModule::kNone; },
       {"the loaded one is none"}},
      {"misaligned", [](Bench& b) { b.buffer.address += 256; }, {"is not host-page aligned"}},
      {"export fails",
       [](Bench& b) { b.api.InjectFailure(FakeCall::kGetDmaBufFd, cuda_error::kNotSupported); },
       {"cuMemGetHandleForAddressRange: cudaErrorNotSupported (801)"}},
      {"NIC cannot import",
       [](Bench& b) {
         b.registrar.dma_buf_answer =
             Status::Unimplemented("ibv_reg_dmabuf_mr on rxe0: EOPNOTSUPP");
       },
       {"the RDMA device cannot register a dma-buf: ibv_reg_dmabuf_mr on rxe0: EOPNOTSUPP"}},
      {"import fails",
       [](Bench& b) { b.registrar.dma_buf_answer = Status::ResourceExhausted("memlock"); },
       {"registering a dma-buf failed: RESOURCE_EXHAUSTED: memlock"}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    Bench bench;
    row.setup(bench);
    const GpuLanding landing = bench.Choose();
    CHECK(landing.rung == Rung::kPeerMem);
    REQUIRE(landing.step_downs.size() == 1);
    CHECK(landing.step_downs[0].from == Rung::kDmaBuf);
    for (std::string_view want : row.says) {
      CAPTURE(want);
      CHECK(Has(landing.step_downs[0].reason, want));
    }
    REQUIRE(landing.region != nullptr);
    CHECK(landing.region->kind() == rdmaio::MemoryKind::kDevice);
    CHECK(bench.api.sticky_error() == cuda_error::kSuccess);
    for (const int fd : bench.api.dma_buf_fds()) CHECK(fcntl(fd, F_GETFD) == -1);
  }
}

TEST_CASE("rung 2: ibv_reg_mr on the device VA, after SYNC_MEMOPS") {
  Bench bench;
  bench.options.dma_buf = false;
  const GpuLanding landing = bench.Choose();
  CHECK(landing.rung == Rung::kPeerMem);
  CHECK(bench.api.calls(FakeCall::kSetSyncMemops) == 1);
  REQUIRE(bench.registrar.seen.size() == 1);
  const auto& device = std::get<rdmaio::DeviceMemory>(bench.registrar.seen[0]);
  CHECK(device.address == kGpuVa);
  CHECK(device.length == kLength);
}

TEST_CASE("every reason to step down from nvidia-peermem, then host staging") {
  struct Row {
    std::string name;
    std::function<void(Bench&)> setup;
    std::string_view says;
  };
  const Row rows[] = {
      {"turned off", [](Bench& b) { b.options.peermem = false; }, "turned off"},
      {"attribute", [](Bench& b) { b.api.devices[0].gpu_direct_rdma_supported = 0; },
       "GPU 0 (Fake H200) does not report GPU_DIRECT_RDMA_SUPPORTED"},
      {"module", [](Bench& b) { b.host.peermem_loaded = false; },
       "the nvidia_peermem module is not loaded"},
      {"sync memops",
       [](Bench& b) { b.api.InjectFailure(FakeCall::kSetSyncMemops, cuda_error::kInvalidValue); },
       "cuPointerSetAttribute(SYNC_MEMOPS): cudaErrorInvalidValue (1)"},
      {"no peer client",
       [](Bench& b) {
         b.registrar.device_answer = Status::Unimplemented("ibv_reg_mr: Bad address");
       },
       "the RDMA device cannot register the device VA: ibv_reg_mr: Bad address"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    Bench bench;
    bench.options.dma_buf = false;
    row.setup(bench);
    const GpuLanding landing = bench.Choose();
    CHECK(landing.rung == Rung::kHostStaging);
    REQUIRE(landing.step_downs.size() == 2);
    CHECK(landing.step_downs[1].from == Rung::kPeerMem);
    CHECK(Has(landing.step_downs[1].reason, row.says));
    CHECK(bench.api.sticky_error() == cuda_error::kSuccess);
  }
}

TEST_CASE("rung 3: the staging buffer pinned, then registered; both undone in that order") {
  Bench bench;
  bench.options.dma_buf = false;
  bench.options.peermem = false;
  {
    const GpuLanding landing = bench.Choose();
    CHECK(landing.rung == Rung::kHostStaging);
    REQUIRE(landing.staging_pin.has_value());
    CHECK(landing.staging_pin->bytes().data() == bench.staging.data);
    REQUIRE(landing.region != nullptr);
    CHECK(landing.region->kind() == rdmaio::MemoryKind::kHost);
    CHECK(landing.region->length() == bench.staging.size);
    CHECK_FALSE(landing.needs_flush);
    CHECK(bench.api.pinned_ranges() == 1);
  }
  CHECK(bench.api.pinned_ranges() == 0);
}

TEST_CASE("every reason to step down from host staging, then pread") {
  struct Row {
    std::string name;
    std::function<void(Bench&)> setup;
    std::string_view says;
  };
  const Row rows[] = {
      {"turned off", [](Bench& b) { b.options.host_staging = false; }, "turned off"},
      {"attribute", [](Bench& b) { b.api.devices[0].host_register_supported = 0; },
       "GPU 0 (Fake H200) does not report HOST_REGISTER_SUPPORTED"},
      {"no buffer", [](Bench& b) { b.has_staging = false; }, "no host staging buffer"},
      {"pin fails",
       [](Bench& b) {
         b.api.InjectFailure(FakeCall::kHostRegister, cuda_error::kMemoryAllocation);
       },
       "cudaErrorMemoryAllocation (2)"},
      {"register fails",
       [](Bench& b) { b.registrar.host_answer = Status::ResourceExhausted("memlock limit"); },
       "registering the staging buffer failed: RESOURCE_EXHAUSTED: memlock limit"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    Bench bench;
    bench.options.dma_buf = false;
    bench.options.peermem = false;
    row.setup(bench);
    const GpuLanding landing = bench.Choose();
    CHECK(landing.rung == Rung::kPread);
    CHECK(landing.region == nullptr);
    CHECK_FALSE(landing.staging_pin.has_value());
    REQUIRE(landing.step_downs.size() == 3);
    CHECK(landing.step_downs[2].from == Rung::kHostStaging);
    CHECK(Has(landing.step_downs[2].reason, row.says));
    CHECK(bench.api.pinned_ranges() == 0);  // a pin that was not used is undone
    CHECK(bench.api.sticky_error() == cuda_error::kSuccess);
  }
}

TEST_CASE("no RDMA device: every rung says so, pread") {
  Bench bench;
  bench.has_registrar = false;
  const GpuLanding landing = bench.Choose();
  CHECK(landing.rung == Rung::kPread);
  REQUIRE(landing.step_downs.size() == 3);
  for (const StepDown& step : landing.step_downs) {
    CHECK(step.reason == "no RDMA device to register the buffer with");
  }
  CHECK(bench.api.calls(FakeCall::kGetDmaBufFd) == 0);
  CHECK(bench.api.pinned_ranges() == 0);
}

TEST_CASE("no usable GPU: every rung names the probe's line, pread") {
  struct Row {
    FakeCudaApi api;
    std::string_view says;
  };
  Row rows[] = {{FakeCudaApi::NoDriver(), "no NVIDIA driver"},
                {FakeCudaApi::StubLibrary(), "stub libcuda.so"},
                {FakeCudaApi::NoDevice(), "sees no CUDA device"}};
  for (Row& row : rows) {
    CAPTURE(row.says);
    FakeRegistrar registrar;
    PageBuffer staging(4096);
    const GpuProbe probe = Probe(row.api, kEverything);
    const GpuLanding landing = ChooseLanding(row.api, probe, &registrar, kBuffer, staging.span());
    CHECK(landing.rung == Rung::kPread);
    REQUIRE(landing.step_downs.size() == 3);
    for (const StepDown& step : landing.step_downs) {
      CHECK(step.reason.starts_with("no usable GPU: "));
      CHECK(Has(step.reason, row.says));
    }
    CHECK(registrar.seen.empty());
  }
}

TEST_CASE("a buffer on a device the probe did not list") {
  Bench bench;
  bench.buffer.device = 3;
  const GpuLanding landing = bench.Choose();
  CHECK(landing.rung == Rung::kPread);
  REQUIRE(landing.step_downs.size() == 3);
  CHECK(landing.step_downs[0].reason == "GPU 3 is not among the 1 devices probed");
}

TEST_CASE("exactly one log line per step down, naming rung and reason") {
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("reelfs-ladder-" + std::to_string(getpid()));
  REQUIRE(LogToFile(log.string()).ok());
  REQUIRE(ConfigureLogging("info").ok());
  {
    Bench bench;
    bench.has_registrar = false;
    (void)bench.Choose();
  }
  LogToStderr();  // closes (and flushes) the file
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (Has(line, "unavailable:")) lines.push_back(line);
  }
  std::filesystem::remove(log);
  REQUIRE(lines.size() == 3);
  CHECK(Has(lines[0], "dma-buf unavailable: no RDMA device"));
  CHECK(Has(lines[0], "trying nvidia-peermem"));
  CHECK(Has(lines[1], "nvidia-peermem unavailable: no RDMA device"));
  CHECK(Has(lines[1], "trying host-staging"));
  CHECK(Has(lines[2], "host-staging unavailable: no RDMA device"));
  CHECK(Has(lines[2], "trying pread"));
}

}  // namespace
}  // namespace reelfs::cuda

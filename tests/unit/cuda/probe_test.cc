// cuda/probe.h: the no-GPU lines, the per-device facts, the host facts and the JSON.
#include "cuda/probe.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "cuda/fake/fake_cuda_api.h"

namespace reelfs::cuda {
namespace {

constexpr std::string_view kOpenVersion =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Wed Feb 26 01:55:07 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
constexpr std::string_view kProprietaryVersion =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";

// A directory under $TMPDIR removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "reelfs-probe-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void Write(const std::string& name, std::string_view text) const {
    std::ofstream(path / name) << text;
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
};

TEST_CASE("the three machines without a usable GPU each give one line") {
  struct Row {
    FakeCudaApi api;
    int code;
    std::vector<std::string_view> says;
  };
  Row rows[] = {
      {FakeCudaApi::NoDriver(), 35, {"no NVIDIA driver", "cudaErrorInsufficientDriver, 35"}},
      {FakeCudaApi::StubLibrary(), 34, {"stub libcuda.so", "cudaErrorStubLibrary, 34"}},
      {FakeCudaApi::NoDevice(),
       100,
       {"driver (CUDA 13.0) sees no CUDA device", "cudaErrorNoDevice, 100", "CUDA_VISIBLE"}},
  };
  for (Row& row : rows) {
    CAPTURE(row.code);
    const GpuProbe probe = Probe(row.api, HostFacts{});
    CHECK_FALSE(probe.usable());
    CHECK(probe.devices.empty());
    CHECK(probe.error_code == row.code);
    CHECK(probe.error.find('\n') == std::string::npos);
    CHECK(probe.error.find("GPU landing is off") != std::string::npos);
    for (std::string_view want : row.says) {
      CAPTURE(want);
      CHECK(probe.error.find(want) != std::string::npos);
    }
    CHECK(row.api.sticky_error() == cuda_error::kSuccess);  // cleared, not left for later calls
  }
}

TEST_CASE("a driver older than the runtime is named as such") {
  FakeCudaApi api = FakeCudaApi::NoDriver();
  api.driver_version = 12020;
  const GpuProbe probe = Probe(api, HostFacts{});
  CHECK(probe.error_code == 35);
  CHECK(probe.error.find("supports CUDA 12.2 but this binary's runtime needs 13.0") !=
        std::string::npos);
}

TEST_CASE("another cudaGetDeviceCount failure, and zero devices, are lines too") {
  FakeCudaApi odd(1);
  odd.device_count_error = 999;
  const GpuProbe failed = Probe(odd, HostFacts{});
  CHECK(failed.error == "cudaGetDeviceCount failed: cudaError999 (999); GPU landing is off");

  FakeCudaApi none(0);
  const GpuProbe empty = Probe(none, HostFacts{});
  CHECK_FALSE(empty.usable());
  CHECK(empty.error.find("0 devices") != std::string::npos);
}

TEST_CASE("per device: name, bus id and the four attributes") {
  FakeCudaApi api(2);
  api.driver_version = 12080;
  api.devices[1].info.name = "Other";
  api.devices[1].dma_buf_supported = 0;
  api.devices[1].gpu_direct_rdma_supported = 0;
  api.devices[1].rdma_writes_ordering = 0;
  api.devices[1].host_register_supported = 0;
  const GpuProbe probe = Probe(api, HostFacts{.kernel_module = KernelModule::kOpen});
  REQUIRE(probe.usable());
  CHECK(probe.driver_version == 12080);
  CHECK(probe.runtime_version == 13000);
  REQUIRE(probe.devices.size() == 2);
  CHECK(probe.devices[0].index == 0);
  CHECK(probe.devices[0].info.name == "Fake H200");
  CHECK(probe.devices[0].info.pci_bus_id == "0000:17:00.0");
  CHECK(probe.devices[0].dma_buf_supported);
  CHECK(probe.devices[0].gpu_direct_rdma_supported);
  CHECK(probe.devices[0].rdma_writes_ordering == kRdmaWritesOrderingOwner);
  CHECK(probe.devices[0].host_register_supported);
  CHECK(probe.devices[1].index == 1);
  CHECK(probe.devices[1].info.name == "Other");
  CHECK_FALSE(probe.devices[1].dma_buf_supported);
  CHECK_FALSE(probe.devices[1].gpu_direct_rdma_supported);
  CHECK(probe.devices[1].rdma_writes_ordering == 0);
  CHECK_FALSE(probe.devices[1].host_register_supported);
}

TEST_CASE("an attribute the device cannot report counts as unsupported, error cleared") {
  FakeCudaApi api(1);
  api.InjectFailure(FakeCall::kGetDeviceAttribute, cuda_error::kInvalidValue, 1);  // DMA_BUF
  const GpuProbe probe = Probe(api, HostFacts{});
  REQUIRE(probe.usable());
  CHECK_FALSE(probe.devices[0].dma_buf_supported);
  CHECK(probe.devices[0].gpu_direct_rdma_supported);
  CHECK(api.sticky_error() == cuda_error::kSuccess);
}

TEST_CASE("ParseKernelModule: open, proprietary, none") {
  CHECK(ParseKernelModule(kOpenVersion) == KernelModule::kOpen);
  CHECK(ParseKernelModule(kProprietaryVersion) == KernelModule::kProprietary);
  CHECK(ParseKernelModule("") == KernelModule::kNone);
  CHECK(ParseKernelModule("something else\n") == KernelModule::kNone);
  // Only the NVRM line counts, not a later line that happens to say the words.
  CHECK(ParseKernelModule("NVRM version: x86_64 Kernel Module 1\nOpen Kernel Module\n") ==
        KernelModule::kProprietary);
  CHECK(KernelModuleName(KernelModule::kNone) == "none");
  CHECK(KernelModuleName(KernelModule::kOpen) == "open");
  CHECK(KernelModuleName(KernelModule::kProprietary) == "proprietary");
}

TEST_CASE("ModulesListPeermem matches the whole module name") {
  CHECK(ModulesListPeermem("nvidia_peermem 16384 0 - Live 0x0\n"));
  CHECK(ModulesListPeermem("mlx5_ib 1 0 - Live 0\nnvidia_peermem 16384 0 - Live 0x0"));
  CHECK_FALSE(ModulesListPeermem("nvidia 1 0 - Live 0\n"));
  CHECK_FALSE(ModulesListPeermem("nvidia_peermemx 1 0 - Live 0\n"));
  CHECK_FALSE(ModulesListPeermem("foo nvidia_peermem 1\n"));
  CHECK_FALSE(ModulesListPeermem(""));
}

TEST_CASE("ReadHostFacts: missing files are facts, present ones are read") {
  TempDir dir;
  const HostPaths paths{.nvidia_version = dir / "version",
                        .modules = dir / "modules",
                        .peermem_module = dir / "nvidia_peermem"};
  HostFacts none = ReadHostFacts(paths);
  CHECK(none.kernel_module == KernelModule::kNone);
  CHECK(none.nvrm_version.empty());
  CHECK_FALSE(none.peermem_loaded);

  dir.Write("version", kOpenVersion);
  dir.Write("modules", "nvidia_peermem 16384 0 - Live 0x0\n");
  HostFacts open = ReadHostFacts(paths);
  CHECK(open.kernel_module == KernelModule::kOpen);
  CHECK(open.nvrm_version.starts_with("NVRM version: NVIDIA UNIX Open Kernel Module"));
  CHECK(open.nvrm_version.find('\n') == std::string::npos);
  CHECK(open.peermem_loaded);

  dir.Write("version", kProprietaryVersion);
  dir.Write("modules", "nvidia 1 0 - Live 0\n");
  CHECK(ReadHostFacts(paths).kernel_module == KernelModule::kProprietary);
  CHECK_FALSE(ReadHostFacts(paths).peermem_loaded);
  REQUIRE(mkdir((dir / "nvidia_peermem").c_str(), 0700) == 0);  // the /sys/module way
  CHECK(ReadHostFacts(paths).peermem_loaded);
}

TEST_CASE("FormatCudaVersion") {
  CHECK(FormatCudaVersion(13000) == "13.0");
  CHECK(FormatCudaVersion(12040) == "12.4");
  CHECK(FormatCudaVersion(11070) == "11.7");
  CHECK(FormatCudaVersion(0) == "none");
}

TEST_CASE("ToJson: the error without a GPU, every device field with one") {
  FakeCudaApi none = FakeCudaApi::NoDriver();
  const Json no_gpu = ToJson(Probe(none, HostFacts{}));
  CHECK(no_gpu["usable"] == false);
  CHECK(no_gpu["error_code"] == 35);
  CHECK(no_gpu["error"].get<std::string>().find("no NVIDIA driver") != std::string::npos);
  CHECK(no_gpu["driver_cuda_version"] == "none");
  CHECK(no_gpu["runtime_cuda_version"] == "13.0");
  CHECK(no_gpu["kernel_module"] == "none");
  CHECK(no_gpu["devices"].empty());

  FakeCudaApi api(1);
  const Json gpu = ToJson(Probe(api, HostFacts{.kernel_module = KernelModule::kOpen,
                                               .nvrm_version = "NVRM version: x",
                                               .peermem_loaded = true}));
  CHECK(gpu["usable"] == true);
  CHECK_FALSE(gpu.contains("error"));
  CHECK(gpu["kernel_module"] == "open");
  CHECK(gpu["nvrm_version"] == "NVRM version: x");
  CHECK(gpu["nvidia_peermem"] == true);
  REQUIRE(gpu["devices"].size() == 1);
  const Json& d = gpu["devices"][0];
  CHECK(d["index"] == 0);
  CHECK(d["name"] == "Fake H200");
  CHECK(d["pci_bus_id"] == "0000:17:00.0");
  CHECK(d["total_memory"] == uint64_t{141} << 30);
  CHECK(d["dma_buf"] == true);
  CHECK(d["gpu_direct_rdma"] == true);
  CHECK(d["rdma_writes_ordering"] == 100);
  CHECK(d["host_register"] == true);
  CHECK(DumpJson(gpu).find('\n') == std::string::npos);
}

TEST_CASE("Summary: the error line without a GPU, one line per machine with one") {
  FakeCudaApi none = FakeCudaApi::NoDriver();
  const GpuProbe no_gpu = Probe(none, HostFacts{});
  CHECK(Summary(no_gpu) == no_gpu.error);

  FakeCudaApi api(2);
  api.devices[1].dma_buf_supported = 0;
  const std::string line =
      Summary(Probe(api, HostFacts{.kernel_module = KernelModule::kOpen, .peermem_loaded = true}));
  CHECK(line ==
        "2 GPUs: 0 Fake H200 (dma-buf yes, GPUDirect RDMA yes, host register yes); 1 Fake H200 "
        "(dma-buf no, GPUDirect RDMA yes, host register yes); kernel module open, nvidia_peermem "
        "loaded; CUDA driver 13.0, runtime 13.0");
}

}  // namespace
}  // namespace reelfs::cuda

// reelfs-gpu-probe: prints what this machine offers for GPU landing (docs/gpu.md "Probe").
//
//   reelfs-gpu-probe          the probe as one line of JSON on stdout, or one line on stderr
//                             saying why there is no usable GPU
//   reelfs-gpu-probe --json   the JSON on stdout in both cases
//
// Exit codes: 0 at least one usable GPU; 2 no usable GPU (no driver, the stub library, no device,
// a driver too old: the line says which); 1 a usage error.
#include <cstdio>
#include <exception>
#include <string_view>

#include "common/json.h"
#include "cuda/probe.h"
#include "cuda/real_cuda_api.h"

namespace {

constexpr int kExitGpu = 0;
constexpr int kExitUsage = 1;
constexpr int kExitNoGpu = 2;

int Run(int argc, char** argv) {
  bool json_always = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      json_always = true;
    } else if (arg == "-h" || arg == "--help") {
      std::puts(
          "usage: reelfs-gpu-probe [--json]\n"
          "exit 0: a usable GPU; 2: none (the line says why); 1: usage");
      return kExitGpu;
    } else {
      std::fprintf(stderr, "reelfs-gpu-probe: unknown argument '%s' (try --help)\n", argv[i]);
      return kExitUsage;
    }
  }
  // A plain process: no fork follows, so CUDA may be initialised here (cuda_api.h).
  const auto api = reelfs::cuda::CreateRealCudaApi();
  const reelfs::cuda::GpuProbe probe = reelfs::cuda::Probe(*api, reelfs::cuda::ReadHostFacts());
  if (probe.usable() || json_always) {
    std::printf("%s\n", reelfs::DumpJson(reelfs::cuda::ToJson(probe)).c_str());
  }
  if (!probe.usable()) {
    if (!json_always) std::fprintf(stderr, "reelfs-gpu-probe: %s\n", probe.error.c_str());
    return kExitNoGpu;
  }
  return kExitGpu;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reelfs-gpu-probe: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "reelfs-gpu-probe: unknown exception\n");
  }
  return kExitUsage;
}

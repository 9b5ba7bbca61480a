// cuda/ipc_landing.h: a CUDA IPC handle opened, checked against its allocation and landed over
// dma-buf or nvidia-peermem, against FakeCudaApi and a fake registrar; every refusal closes what
// it opened.
#include "cuda/ipc_landing.h"

#include <string>

#include <doctest/doctest.h>

#include "cuda/fake/fake_cuda_api.h"
#include "tests/unit/cuda/fake_registrar.h"

namespace reelfs::cuda {
namespace {

using testing::FakeRegistrar;

constexpr uint64_t kVa = uint64_t{0x7e00} << 32;
constexpr uint64_t kSize = 256 * 4096;
const HostFacts kEverything{.kernel_module = KernelModule::kOpen, .peermem_loaded = true};

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

TEST_CASE("a handle opened, landed over dma-buf, closed after the registration goes") {
  FakeCudaApi api(2);
  const IpcHandle handle = api.ExportIpc(/*device=*/1, kVa, kSize);
  FakeRegistrar registrar;
  {
    auto ipc = IpcLanding::Open(api, Probe(api, kEverything), &registrar, handle, kSize / 2);
    REQUIRE(ipc.ok());
    CHECK((*ipc)->address() == kVa);
    CHECK((*ipc)->landing().rung == Rung::kDmaBuf);
    REQUIRE(registrar.seen.size() == 1);
    const auto& dmabuf = std::get<rdmaio::DmaBufMemory>(registrar.seen[0]);
    CHECK(dmabuf.length == kSize / 2);  // the declared window, not the whole allocation
    CHECK(dmabuf.iova == kVa);
    CHECK(api.ipc_open_mappings() == 1);
    CHECK((*ipc)->AfterRdmaWrites().ok());
    CHECK(api.calls(FakeCall::kFlushGpuDirectRdmaWrites) == 0);  // ordered for the owner
  }
  CHECK(api.ipc_open_mappings() == 0);
  CHECK(api.calls(FakeCall::kIpcCloseMemHandle) == 1);
}

TEST_CASE("nvidia-peermem when dma-buf is refused; a flush where writes are not ordered") {
  FakeCudaApi api(1);
  api.devices[0].rdma_writes_ordering = 0;
  const IpcHandle handle = api.ExportIpc(0, kVa, kSize);
  FakeRegistrar registrar;
  registrar.dma_buf_answer = Status::Unimplemented("ibv_reg_dmabuf_mr on mlx5_0: not supported");
  auto ipc = IpcLanding::Open(api, Probe(api, kEverything), &registrar, handle, kSize);
  REQUIRE(ipc.ok());
  CHECK((*ipc)->landing().rung == Rung::kPeerMem);
  CHECK((*ipc)->landing().needs_flush);
  CHECK((*ipc)->AfterRdmaWrites().ok());
  CHECK(api.calls(FakeCall::kFlushGpuDirectRdmaWrites) == 1);
  api.InjectFailure(FakeCall::kFlushGpuDirectRdmaWrites, cuda_error::kNotSupported);
  CHECK_FALSE((*ipc)->AfterRdmaWrites().ok());
}

TEST_CASE("refusals: each with its reason, and nothing left open") {
  FakeCudaApi api(1);
  const IpcHandle handle = api.ExportIpc(0, kVa, kSize);
  FakeRegistrar registrar;
  const GpuProbe probe = Probe(api, kEverything);

  SUBCASE("a handle that names nothing") {
    IpcHandle other = handle;
    other[0] ^= 0xff;
    auto ipc = IpcLanding::Open(api, probe, &registrar, other, 4096);
    CHECK(ipc.status().code() == StatusCode::kInvalidArgument);
    CHECK(Has(ipc.status().message(), "cudaIpcOpenMemHandle"));
    CHECK(api.sticky_error() == cuda_error::kSuccess);  // cleared
  }
  SUBCASE("a length beyond the allocation") {
    auto ipc = IpcLanding::Open(api, probe, &registrar, handle, kSize + 4096);
    CHECK(ipc.status().code() == StatusCode::kInvalidArgument);
    CHECK(Has(ipc.status().message(), "declared"));
    CHECK(registrar.seen.empty());  // refused before the NIC heard of it
  }
  SUBCASE("a length of 0") {
    CHECK(IpcLanding::Open(api, probe, &registrar, handle, 0).status().code() ==
          StatusCode::kInvalidArgument);
  }
  SUBCASE("no RDMA device: refused before CUDA opens the handle") {
    auto ipc = IpcLanding::Open(api, probe, nullptr, handle, kSize);
    CHECK(ipc.status().code() == StatusCode::kUnimplemented);
    CHECK(Has(ipc.status().message(), "no --rdma"));
    CHECK(api.calls(FakeCall::kIpcOpenMemHandle) == 0);
  }
  SUBCASE("neither dma-buf nor peermem: both reasons, host staging not offered") {
    registrar.dma_buf_answer = Status::Unimplemented("ibv_reg_dmabuf_mr on rxe0: not supported");
    registrar.device_answer = Status::Unimplemented("ibv_reg_mr on device memory: Bad address");
    auto ipc = IpcLanding::Open(api, probe, &registrar, handle, kSize);
    CHECK(ipc.status().code() == StatusCode::kUnimplemented);
    const std::string why(ipc.status().message());
    CHECK(Has(why, "dma-buf: the RDMA device cannot register a dma-buf"));
    CHECK(Has(why, "nvidia-peermem: the RDMA device cannot register the device VA"));
    CHECK_FALSE(Has(why, "host-staging"));
  }
  SUBCASE("the allocation's extent cannot be read") {
    api.InjectFailure(FakeCall::kGetAllocation, cuda_error::kSymbolNotFound);
    CHECK_FALSE(IpcLanding::Open(api, probe, &registrar, handle, kSize).ok());
  }
  CHECK(api.ipc_open_mappings() == 0);
}

TEST_CASE("no usable GPU: the probe's line, and CUDA is not asked to open anything") {
  FakeCudaApi api = FakeCudaApi::NoDriver();
  FakeRegistrar registrar;
  auto ipc = IpcLanding::Open(api, Probe(api, kEverything), &registrar, IpcHandle{}, 4096);
  CHECK(ipc.status().code() == StatusCode::kUnimplemented);
  CHECK(Has(ipc.status().message(), "no usable GPU"));
  CHECK(Has(ipc.status().message(), "35"));
  CHECK(api.calls(FakeCall::kIpcOpenMemHandle) == 0);
}

}  // namespace
}  // namespace reelfs::cuda

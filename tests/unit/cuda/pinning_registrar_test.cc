// cuda::PinningRegistrar (`reelfs mount --cuda-pin`): pins host memory before the inner
// registrar registers it, keeps both for the region's life, and tears down NIC first, pin last.
#include "cuda/pinning_registrar.h"

#include <memory>
#include <vector>

#include <doctest/doctest.h>
#include <sys/mman.h>

#include "cuda/cuda_status.h"
#include "cuda/fake/fake_cuda_api.h"
#include "tests/fakes/host_region.h"

namespace reelfs::cuda {
namespace {

// The inner (RDMA) registrar: FakeHostRegions that note, when destroyed, whether the memory
// was still pinned (it must be: the NIC registration goes first).
class InnerRegistrar final : public rdmaio::MemoryRegistrar {
 public:
  explicit InnerRegistrar(FakeCudaApi& api) : api_(api) {}
  Status answer;
  int calls = 0;
  std::vector<bool> pinned_at_teardown;

  Result<std::shared_ptr<rdmaio::RegisteredRegion>> Register(
      const rdmaio::MemorySource& source) override {
    ++calls;
    if (!answer.ok()) return answer;
    std::span<std::byte> bytes;
    if (const auto* host = std::get_if<rdmaio::HostMemory>(&source)) bytes = host->bytes;
    auto* region = new testing::FakeHostRegion(bytes);
    return std::shared_ptr<rdmaio::RegisteredRegion>(region, [this](rdmaio::RegisteredRegion* r) {
      pinned_at_teardown.push_back(api_.pinned_ranges() > 0);
      delete r;
    });
  }

 private:
  FakeCudaApi& api_;
};

struct Pages {
  explicit Pages(size_t n) : size(n * 4096) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    data = static_cast<std::byte*>(p);
  }
  ~Pages() { munmap(data, size); }
  std::span<std::byte> span() const { return {data, size}; }
  std::byte* data;
  size_t size;
};

TEST_CASE("pinning registrar: host memory pinned for the region's life, no inner registrar") {
  FakeCudaApi api;
  PinningRegistrar registrar(api, nullptr);
  Pages pages(4);
  {
    auto region = registrar.Register(rdmaio::HostMemory{pages.span()});
    REQUIRE(region.ok());
    CHECK((*region)->kind() == rdmaio::MemoryKind::kHost);
    CHECK((*region)->host_bytes().data() == pages.data);
    CHECK((*region)->length() == pages.size);
    CHECK(api.pinned_ranges() == 1);
    CHECK(registrar.pinned_bytes() == pages.size);
  }
  CHECK(api.pinned_ranges() == 0);
  CHECK(api.host_unregister_calls().size() == 1);
  CHECK(registrar.pinned_bytes() == 0);
  // Device memory needs an RDMA registrar.
  CHECK(registrar.Register(rdmaio::DeviceMemory{0x1000, 4096}).status().code() ==
        StatusCode::kUnimplemented);
  CHECK(registrar.Register(rdmaio::HostMemory{}).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("pinning registrar: the inner region itself comes back; NIC goes before the pin") {
  FakeCudaApi api;
  auto inner = std::make_shared<InnerRegistrar>(api);
  PinningRegistrar registrar(api, inner);
  Pages pages(2);
  {
    auto region = registrar.Register(rdmaio::HostMemory{pages.span()});
    REQUIRE(region.ok());
    // A channel that downcasts to its own region type still can.
    CHECK(dynamic_cast<const testing::FakeHostRegion*>(region->get()) != nullptr);
    CHECK(inner->calls == 1);
    CHECK(api.pinned_ranges() == 1);
  }
  REQUIRE(inner->pinned_at_teardown.size() == 1);
  CHECK(inner->pinned_at_teardown[0]);
  CHECK(api.pinned_ranges() == 0);

  // Other kinds go to the inner registrar untouched: nothing pinned.
  auto device = registrar.Register(rdmaio::DeviceMemory{0x2000, 65536});
  CHECK(device.ok());
  CHECK(inner->calls == 2);
  CHECK(api.host_register_calls().size() == 1);
}

TEST_CASE("pinning registrar: a failed pin costs the pin only; a failed NIC registration unpins") {
  FakeCudaApi api;
  auto inner = std::make_shared<InnerRegistrar>(api);
  PinningRegistrar registrar(api, inner);
  Pages pages(2);
  api.InjectFailure(FakeCall::kHostRegister, cuda_error::kMemoryAllocation);
  auto unpinned = registrar.Register(rdmaio::HostMemory{pages.span()});
  REQUIRE(unpinned.ok());  // still registered with the NIC
  CHECK(registrar.failures() == 1);
  CHECK(api.pinned_ranges() == 0);
  // The sticky error was cleared (host_pin.h), so the next pin works.
  auto pinned = registrar.Register(rdmaio::HostMemory{pages.span()});
  REQUIRE(pinned.ok());
  CHECK(api.pinned_ranges() == 1);
  pinned->reset();
  unpinned->reset();

  inner->answer = Status::ResourceExhausted("memlock");
  auto refused = registrar.Register(rdmaio::HostMemory{pages.span()});
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(api.pinned_ranges() == 0);  // the pin taken for it was let go

  PinningRegistrar alone(api, nullptr);
  api.InjectFailure(FakeCall::kHostRegister, cuda_error::kMemoryAllocation);
  CHECK_FALSE(alone.Register(rdmaio::HostMemory{pages.span()}).ok());
  CHECK(alone.failures() == 1);
}

}  // namespace
}  // namespace reelfs::cuda

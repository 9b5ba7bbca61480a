// cuda/host_pin.h against FakeCudaApi: chunking, 712, failures and teardown.
#include "cuda/host_pin.h"

#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "cuda/fake/fake_cuda_api.h"

namespace reelfs::cuda {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

// A span over an address range that is never touched (the fake only records pointers), so
// terabyte ranges can be planned without memory.
std::span<std::byte> FakeRange(size_t size) {
  return {reinterpret_cast<std::byte*>(uintptr_t{1} << 44), size};
}

PinOptions NoAdvice(size_t max_chunk = kMaxPinChunk) {
  return {.max_chunk = max_chunk, .advise_hugepages = false};
}

TEST_CASE("PlanPinChunks: consecutive chunks of at most max_chunk") {
  CHECK(PlanPinChunks(0, 4).empty());
  CHECK(PlanPinChunks(10, 0).empty());
  CHECK(PlanPinChunks(10, 4) == std::vector<PinChunk>{{.offset = 0, .length = 4},
                                                      {.offset = 4, .length = 4},
                                                      {.offset = 8, .length = 2}});
  CHECK(PlanPinChunks(8, 4) ==
        std::vector<PinChunk>{{.offset = 0, .length = 4}, {.offset = 4, .length = 4}});
  CHECK(PlanPinChunks(3, 4) == std::vector<PinChunk>{{.offset = 0, .length = 3}});
  // 1 TiB + 1: seventeen calls, none of them anywhere near the 512 GiB at which drivers fail.
  const auto big = PlanPinChunks(1024 * kGiB + 1, kMaxPinChunk);
  REQUIRE(big.size() == 17);
  for (const PinChunk& c : big) CHECK(c.length <= 64 * kGiB);
  CHECK(big.back() == PinChunk{.offset = 1024 * kGiB, .length = 1});
}

TEST_CASE("the default chunk is 64 GiB") { CHECK(kMaxPinChunk == 64 * kGiB); }

TEST_CASE("a 130 GiB range is registered in three calls and unregistered in reverse") {
  FakeCudaApi api;
  const auto range = FakeRange(130 * kGiB);
  {
    auto pinned = PinnedHostRange::Pin(api, range, NoAdvice());
    REQUIRE(pinned.ok());
    CHECK(pinned->chunks() == 3);
    CHECK(pinned->already_registered_chunks() == 0);
    CHECK(pinned->bytes().data() == range.data());
    CHECK(pinned->bytes().size() == range.size());
    const auto& calls = api.host_register_calls();
    REQUIRE(calls.size() == 3);
    CHECK(calls[0].ptr == range.data());
    CHECK(calls[0].size == 64 * kGiB);
    CHECK(calls[1].ptr == range.data() + 64 * kGiB);
    CHECK(calls[1].size == 64 * kGiB);
    CHECK(calls[2].ptr == range.data() + 128 * kGiB);
    CHECK(calls[2].size == 2 * kGiB);
    CHECK(api.pinned_ranges() == 3);
    CHECK(api.host_unregister_calls().empty());
  }
  CHECK(api.pinned_ranges() == 0);
  REQUIRE(api.host_unregister_calls().size() == 3);
  CHECK(api.host_unregister_calls()[0] == range.data() + 128 * kGiB);
  CHECK(api.host_unregister_calls()[2] == range.data());
}

TEST_CASE("real memory: madvise first, flags passed through, small chunks") {
  std::vector<std::byte> memory(5 * 4096 + 100);
  FakeCudaApi api;
  auto pinned = PinnedHostRange::Pin(api, memory,
                                     {.max_chunk = 4096, .flags = 0x1, .advise_hugepages = true});
  REQUIRE(pinned.ok());
  CHECK(pinned->chunks() == 6);
  for (const auto& call : api.host_register_calls()) CHECK(call.flags == 0x1);
  CHECK(api.host_register_calls().back().size == 100);
}

TEST_CASE("a chunk pinned by someone else (712) counts as pinned and is left to its owner") {
  FakeCudaApi api;
  const auto range = FakeRange(3 * 4096);
  api.PreRegister(range.data() + 4096, 4096);  // the middle chunk, e.g. by UCX
  {
    auto pinned = PinnedHostRange::Pin(api, range, NoAdvice(4096));
    REQUIRE(pinned.ok());
    CHECK(pinned->chunks() == 3);
    CHECK(pinned->already_registered_chunks() == 1);
    CHECK(api.sticky_error() == cuda_error::kSuccess);  // the 712 was cleared
  }
  REQUIRE(api.host_unregister_calls().size() == 2);
  CHECK(api.host_unregister_calls()[0] == range.data() + 2 * 4096);
  CHECK(api.host_unregister_calls()[1] == range.data());
}

TEST_CASE("pinning the same range twice: the second is all 712 and unpins nothing") {
  FakeCudaApi api;
  const auto range = FakeRange(2 * 4096);
  auto first = PinnedHostRange::Pin(api, range, NoAdvice(4096));
  REQUIRE(first.ok());
  {
    auto second = PinnedHostRange::Pin(api, range, NoAdvice(4096));
    REQUIRE(second.ok());
    CHECK(second->already_registered_chunks() == 2);
  }
  CHECK(api.host_unregister_calls().empty());
  CHECK(api.pinned_ranges() == 2);
}

TEST_CASE("a failing chunk: error cleared, earlier chunks unpinned, the CUDA error returned") {
  FakeCudaApi api;
  const auto range = FakeRange(4 * 4096);
  api.InjectFailure(FakeCall::kHostRegister, cuda_error::kMemoryAllocation, 3);
  auto pinned = PinnedHostRange::Pin(api, range, NoAdvice(4096));
  REQUIRE_FALSE(pinned.ok());
  CHECK(pinned.status().code() == StatusCode::kResourceExhausted);
  CHECK(pinned.status().message() ==
        "cudaHostRegister(4096 bytes at offset 8192 of 16384): cudaErrorMemoryAllocation (2)");
  CHECK(api.sticky_error() == cuda_error::kSuccess);
  CHECK(api.host_register_calls().size() == 3);  // stopped at the failure
  CHECK(api.pinned_ranges() == 0);
  REQUIRE(api.host_unregister_calls().size() == 2);
  CHECK(api.host_unregister_calls()[0] == range.data() + 4096);
  CHECK(api.host_unregister_calls()[1] == range.data());
}

TEST_CASE("no driver: kFailedPrecondition, nothing pinned") {
  FakeCudaApi api = FakeCudaApi::NoDriver();
  auto pinned = PinnedHostRange::Pin(api, FakeRange(4096), NoAdvice());
  REQUIRE_FALSE(pinned.ok());
  CHECK(pinned.status().code() == StatusCode::kFailedPrecondition);
  CHECK(pinned.status().message().find("cudaErrorInsufficientDriver (35)") != std::string::npos);
  CHECK(api.sticky_error() == cuda_error::kSuccess);
}

TEST_CASE("nothing to pin is kInvalidArgument and calls nothing") {
  FakeCudaApi api;
  CHECK(PinnedHostRange::Pin(api, {}, NoAdvice()).status().code() == StatusCode::kInvalidArgument);
  CHECK(PinnedHostRange::Pin(api, FakeRange(4096), NoAdvice(0)).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(api.host_register_calls().empty());
}

TEST_CASE("moves hand over the chunks; a move-assigned range unpins its old ones") {
  FakeCudaApi api;
  const auto a = FakeRange(2 * 4096);
  const std::span<std::byte> b(a.data() + (uintptr_t{1} << 30), 4096);
  auto first = PinnedHostRange::Pin(api, a, NoAdvice(4096));
  auto second = PinnedHostRange::Pin(api, b, NoAdvice(4096));
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  PinnedHostRange moved(std::move(first).value());
  CHECK(moved.chunks() == 2);
  CHECK(api.host_unregister_calls().empty());  // the moved-from Result unpins nothing
  moved = std::move(second).value();
  CHECK(moved.bytes().data() == b.data());
  CHECK(api.host_unregister_calls().size() == 2);  // a's two chunks
  CHECK(api.pinned_ranges() == 1);
}

TEST_CASE("a failing unregister is logged and cleared, the rest still unregistered") {
  FakeCudaApi api;
  const auto range = FakeRange(2 * 4096);
  {
    auto pinned = PinnedHostRange::Pin(api, range, NoAdvice(4096));
    REQUIRE(pinned.ok());
    api.InjectFailure(FakeCall::kHostUnregister, cuda_error::kInvalidValue, 1);
  }
  CHECK(api.host_unregister_calls().size() == 2);
  CHECK(api.sticky_error() == cuda_error::kSuccess);
}

}  // namespace
}  // namespace reelfs::cuda

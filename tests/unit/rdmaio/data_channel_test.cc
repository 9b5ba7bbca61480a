// The interfaces compile, are implementable in a few lines, and carry the contract a fake needs:
// a trivial in-test channel that "fetches" by filling the window.
#include "rdmaio/data_channel.h"

#include <cstring>
#include <vector>

#include <doctest/doctest.h>

#include "tests/fakes/host_region.h"

namespace reelfs::rdmaio {
namespace {

using HostRegion = testing::FakeHostRegion;

class HostOnlyRegistrar final : public MemoryRegistrar {
 public:
  Result<std::shared_ptr<RegisteredRegion>> Register(const MemorySource& source) override {
    if (const auto* host = std::get_if<HostMemory>(&source)) {
      if (host->bytes.empty()) return Status::InvalidArgument("empty region");
      return std::shared_ptr<RegisteredRegion>(std::make_shared<HostRegion>(host->bytes));
    }
    return Status::Unimplemented("dma-buf registration needs rdmaio/verbs");
  }
};

class FillChannel final : public DataChannel {
 public:
  void Fetch(FetchRequest request, FetchCallback done) override {
    const RegisteredWindow& w = request.window;
    if (!w.region || w.offset + w.length > w.region->length()) {
      done(Status::InvalidArgument("window outside its region"));
      return;
    }
    std::span<std::byte> dst = w.region->host_bytes().subspan(w.offset, w.length);
    std::memset(dst.data(), 0x5a, dst.size());
    done(FetchResult{
        .bytes = w.length, .object_size = 1 << 20, .etag = "e", .via = DataPath::kRdma});
  }
  MemoryRegistrar& registrar() override { return registrar_; }

 private:
  HostOnlyRegistrar registrar_;
};

TEST_SUITE("rdmaio") {
  TEST_CASE("data channel: register host memory, fetch into a window") {
    FillChannel channel;
    std::vector<std::byte> arena(64 * 1024);
    Result<std::shared_ptr<RegisteredRegion>> region =
        channel.registrar().Register(HostMemory{arena});
    REQUIRE(region.ok());
    CHECK((*region)->kind() == MemoryKind::kHost);
    CHECK(channel.registrar().Register(DmaBufMemory{.fd = 3, .length = 4096}).status().code() ==
          StatusCode::kUnimplemented);

    int calls = 0;
    channel.Fetch(FetchRequest{.bucket = "b",
                               .key = "k",
                               .object_offset = 0,
                               .window = {.region = *region, .offset = 4096, .length = 4096}},
                  [&](Result<FetchResult> r) {
                    ++calls;
                    REQUIRE(r.ok());
                    CHECK(r->bytes == 4096);
                    CHECK(r->via == DataPath::kRdma);
                  });
    CHECK(calls == 1);
    CHECK(arena[4095] == std::byte{0});
    CHECK(arena[4096] == std::byte{0x5a});
    CHECK(arena[8191] == std::byte{0x5a});
    CHECK(arena[8192] == std::byte{0});
  }
}

}  // namespace
}  // namespace reelfs::rdmaio

// EndpointSpread (`mount --rdma` over several endpoints): operations go to the endpoint that is up
// with the fewest in flight, in turn among equals; a down endpoint gets nothing while another is
// up; registration stays on the first channel. Fake channels hold their callbacks, so "in flight"
// is what the test says it is.
#include "rdmaio/channel/endpoint_spread.h"

#include <atomic>
#include <memory>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::channel {
namespace {

class NullRegistrar final : public MemoryRegistrar {
 public:
  Result<std::shared_ptr<RegisteredRegion>> Register(const MemorySource&) override {
    return Status::Unimplemented("fake");
  }
};

// Keeps every callback until Complete(): the operation is in flight until then.
class HoldingChannel final : public DataChannel {
 public:
  void Fetch(FetchRequest request, FetchCallback done) override {
    fetches.push_back(std::move(done));
    (void)request;
  }
  void Put(PutRequest request, PutCallback done) override {
    puts.push_back(std::move(done));
    (void)request;
  }
  MemoryRegistrar& registrar() override { return registrar_; }
  void CompleteAll() {
    for (auto& f : fetches) f(FetchResult{.bytes = 1});
    for (auto& p : puts) p(PutResult{.etag = "e"});
    fetches.clear();
    puts.clear();
  }
  std::vector<FetchCallback> fetches;
  std::vector<PutCallback> puts;
  NullRegistrar registrar_;
};

struct Three {
  std::vector<std::shared_ptr<HoldingChannel>> ch{std::make_shared<HoldingChannel>(),
                                                  std::make_shared<HoldingChannel>(),
                                                  std::make_shared<HoldingChannel>()};
  std::vector<std::atomic<bool>> up = std::vector<std::atomic<bool>>(3);
  std::unique_ptr<EndpointSpread> spread;
  int completed = 0;
  Three() {
    for (auto& u : up) u = true;
    spread = std::make_unique<EndpointSpread>(
        std::vector<std::shared_ptr<DataChannel>>(ch.begin(), ch.end()),
        [this](size_t i) { return up[i].load(); });
  }
  void Fetch() {
    spread->Fetch({.bucket = "b", .key = "k", .window = {.length = 1}},
                  [this](Result<FetchResult> r) { completed += r.ok() ? 1 : 0; });
  }
  void Put() {
    spread->Put({.bucket = "b", .key = "k", .part_number = 1, .upload_id = "u"},
                [this](Result<PutResult> r) { completed += r.ok() ? 1 : 0; });
  }
  std::vector<size_t> held() const {
    std::vector<size_t> out;
    for (const auto& c : ch) out.push_back(c->fetches.size() + c->puts.size());
    return out;
  }
};

TEST_SUITE("rdmaio") {
  TEST_CASE("spread: least in flight, in turn among equals; fetches and puts alike") {
    Three t;
    for (int i = 0; i < 6; ++i) t.Fetch();
    CHECK(t.held() == std::vector<size_t>{2, 2, 2});
    t.ch[1]->CompleteAll();  // endpoint 1 drains: the next two go there
    t.Put();
    t.Fetch();
    CHECK(t.held() == std::vector<size_t>{2, 2, 2});
    CHECK(t.ch[1]->puts.size() == 1);
    for (auto& c : t.ch) c->CompleteAll();
    CHECK(t.completed == 8);
    CHECK(t.spread->operations() == std::vector<uint64_t>{2, 4, 2});
  }

  TEST_CASE("spread: a down endpoint gets nothing while another is up; all down: least loaded") {
    Three t;
    t.up[0] = false;
    for (int i = 0; i < 6; ++i) t.Fetch();
    CHECK(t.held() == std::vector<size_t>{0, 3, 3});
    t.up[0] = true;  // probed back: it takes the next ones (fewest in flight)
    t.Fetch();
    t.Fetch();
    CHECK(t.held() == std::vector<size_t>{2, 3, 3});
    for (auto& u : t.up) u = false;
    t.Fetch();  // nowhere healthy: the least loaded one still gets it (it fails or falls back)
    CHECK(t.held() == std::vector<size_t>{3, 3, 3});
    for (auto& c : t.ch) c->CompleteAll();
    CHECK(t.completed == 9);
  }

  TEST_CASE("spread: registration through the first channel; a callback after the spread is gone") {
    Three t;
    CHECK(&t.spread->registrar() == &t.ch[0]->registrar());
    t.Fetch();
    t.spread.reset();  // a channel may complete later: the spread's counters outlive it
    for (auto& c : t.ch) c->CompleteAll();
    CHECK(t.completed == 1);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::channel

// TransportRouter (`mount --rdma-transport=auto`): each fetch goes to the first channel until the
// predicate says the endpoint declined it, then to the second; registration always through the
// first. Fake channels record what they were sent.
#include "rdmaio/channel/transport_router.h"

#include <atomic>
#include <optional>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::channel {
namespace {

class NullRegistrar final : public MemoryRegistrar {
 public:
  Result<std::shared_ptr<RegisteredRegion>> Register(const MemorySource&) override {
    ++registrations;
    return Status::Unimplemented("fake");
  }
  int registrations = 0;
};

class RecordingChannel final : public DataChannel {
 public:
  explicit RecordingChannel(DataPath via) : via_(via) {}
  void Fetch(FetchRequest request, FetchCallback done) override {
    keys.push_back(request.key);
    done(FetchResult{.bytes = request.window.length, .via = via_});
  }
  MemoryRegistrar& registrar() override { return registrar_; }
  void Put(PutRequest request, PutCallback done) override {
    put_keys.push_back(request.key);
    done(PutResult{.etag = "e", .bytes = request.window.length, .via = via_});
  }

  std::vector<std::string> keys;
  std::vector<std::string> put_keys;
  NullRegistrar registrar_;

 private:
  DataPath via_;
};

Result<FetchResult> FetchKey(DataChannel& channel, std::string key) {
  std::optional<Result<FetchResult>> out;
  channel.Fetch({.bucket = "b", .key = std::move(key), .window = {.length = 10}},
                [&](Result<FetchResult> r) { out = std::move(r); });
  REQUIRE(out.has_value());
  return std::move(*out);
}

TEST_SUITE("rdmaio") {
  TEST_CASE("router: RC until it is declined, then DC; registration stays on the first") {
    auto rc = std::make_shared<RecordingChannel>(DataPath::kRdma);
    auto dc = std::make_shared<RecordingChannel>(DataPath::kRdma);
    std::atomic<bool> rc_declined{false};
    TransportRouter router(
        rc, dc, [&] { return rc_declined.load(); }, "test endpoint");

    CHECK(FetchKey(router, "a").ok());
    CHECK(FetchKey(router, "b").ok());
    rc_declined = true;  // e.g. the PREPARE of "b" was answered 400 InvalidBucketName
    CHECK(FetchKey(router, "c").ok());
    CHECK(FetchKey(router, "d").ok());
    CHECK(rc->keys == std::vector<std::string>{"a", "b"});
    CHECK(dc->keys == std::vector<std::string>{"c", "d"});
    CHECK(router.first_fetches() == 2);
    CHECK(router.second_fetches() == 2);

    CHECK(&router.registrar() == &rc->registrar());
    (void)router.registrar().Register(HostMemory{});
    CHECK(rc->registrar_.registrations == 1);
    CHECK(dc->registrar_.registrations == 0);
  }

  TEST_CASE("router: every Put goes to the first channel, declined or not (DC has no PUT)") {
    auto rc = std::make_shared<RecordingChannel>(DataPath::kRdma);
    auto dc = std::make_shared<RecordingChannel>(DataPath::kRdma);
    TransportRouter router(
        rc, dc, [] { return true; }, "test endpoint");
    std::optional<Result<PutResult>> out;
    router.Put({.bucket = "b", .key = "k", .window = {.length = 7}},
               [&](Result<PutResult> r) { out = std::move(r); });
    REQUIRE(out.has_value());
    REQUIRE(out->ok());
    CHECK((*out)->bytes == 7);
    CHECK(rc->put_keys == std::vector<std::string>{"k"});
    CHECK(dc->put_keys.empty());
  }

  TEST_CASE("DataChannel's own Put: kUnimplemented at once, nothing sent") {
    class FetchOnly final : public DataChannel {
     public:
      void Fetch(FetchRequest, FetchCallback done) override { done(Status::Unimplemented("x")); }
      MemoryRegistrar& registrar() override { return registrar_; }
      NullRegistrar registrar_;
    } channel;
    std::optional<Result<PutResult>> out;
    channel.Put({.bucket = "b", .key = "k", .window = {.length = 7}},
                [&](Result<PutResult> r) { out = std::move(r); });
    REQUIRE(out.has_value());
    CHECK(out->status().code() == StatusCode::kUnimplemented);
  }

  TEST_CASE("router: without a second channel every fetch goes to the first") {
    auto rc = std::make_shared<RecordingChannel>(DataPath::kRdma);
    TransportRouter router(
        rc, nullptr, [] { return true; }, "no DC");
    CHECK(FetchKey(router, "a").ok());
    CHECK(FetchKey(router, "b").ok());
    CHECK(rc->keys.size() == 2);
    CHECK(router.second_fetches() == 0);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::channel

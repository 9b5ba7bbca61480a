#include "s3/fake/fault_injecting_store.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"

namespace reelfs::s3 {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  std::shared_ptr<FakeObjectStore> fake = std::make_shared<FakeObjectStore>();
  FaultInjectingStore store{fake};

  Fixture() { fake->PutObjectForTest("b", "k", "payload"); }

  Result<ObjectInfo> Head(const std::string& key) {
    return Await<ObjectInfo>([&](auto cb) { store.HeadObject({"b", key}, cb); });
  }
  Result<GetObjectResult> Get(std::optional<ByteRange> range = {}) {
    return Await<GetObjectResult>([&](auto cb) {
      store.GetObject({.bucket = "b", .key = "k", .range = range, .buffer = buffer}, cb);
    });
  }
  std::vector<std::byte> storage = std::vector<std::byte>(64);
  std::span<std::byte> buffer{storage};
};

TEST_SUITE("s3") {
  TEST_CASE("FaultInjectingStore passes calls through by default") {
    Fixture f;
    Result<GetObjectResult> r = f.Get();
    REQUIRE(r.ok());
    CHECK(r->bytes == 7);
    CHECK(f.fake->CallCount(Operation::kGetObject) == 1);
    CHECK(f.store.InjectedCount(Operation::kGetObject) == 0);
  }

  TEST_CASE("FaultInjectingStore::FailNext fails exactly N calls, without reaching the store") {
    Fixture f;
    f.store.FailNext(Operation::kGetObject, 2, Status::Unavailable("injected 503"));
    CHECK(f.Get().status().code() == StatusCode::kUnavailable);
    CHECK(f.Get().status().message() == "injected 503");
    CHECK(f.Get().ok());
    CHECK(f.store.InjectedCount(Operation::kGetObject) == 2);
    CHECK(f.fake->CallCount(Operation::kGetObject) == 1);
    // Other operations are unaffected.
    CHECK(f.Head("k").ok());
  }

  TEST_CASE("FaultInjectingStore::SetFault sees the request") {
    Fixture f;
    f.fake->PutObjectForTest("b", "other", "x");
    std::optional<ByteRange> seen_range;
    f.store.SetFault(Operation::kGetObject, [&](const RequestInfo& r) -> std::optional<Status> {
      CHECK(r.op == Operation::kGetObject);
      CHECK(r.bucket == "b");
      seen_range = r.range;
      if (r.range && r.range->offset >= 4) return Status::DataLoss("injected at offset 4");
      return std::nullopt;
    });
    CHECK(f.Get(ByteRange{0, 4}).ok());
    REQUIRE(seen_range.has_value());
    CHECK(*seen_range == ByteRange{0, 4});
    CHECK(f.Get(ByteRange{4, 3}).status().code() == StatusCode::kDataLoss);

    f.store.SetFault(Operation::kHeadObject, [](const RequestInfo& r) -> std::optional<Status> {
      if (r.key == "other") return Status::PermissionDenied("no");
      return Status::Ok();  // OK means "no fault"
    });
    CHECK(f.Head("k").ok());
    CHECK(f.Head("other").status().code() == StatusCode::kPermissionDenied);

    f.store.ClearFaults();
    CHECK(f.Get(ByteRange{4, 3}).ok());
    CHECK(f.Head("other").ok());
  }

  TEST_CASE("FaultInjectingStore: a retry loop recovers after injected failures") {
    Fixture f;
    f.store.FailNext(Operation::kHeadObject, 3, Status::Unavailable("SlowDown"));
    int attempts = 0;
    Result<ObjectInfo> r = f.Head("k");
    while (!r.ok() && IsRetryable(r.status()) && attempts < 10) {
      ++attempts;
      r = f.Head("k");
    }
    CHECK(r.ok());
    CHECK(attempts == 3);
  }

  TEST_CASE("FaultInjectingStore: latency delays the call, asynchronously") {
    Fixture f;
    f.store.SetLatency(Operation::kHeadObject, 50ms);
    auto start = std::chrono::steady_clock::now();
    bool returned_before_callback = false;
    std::atomic<bool> called{false};
    Result<ObjectInfo> r = Await<ObjectInfo>([&](auto cb) {
      f.store.HeadObject({"b", "k"}, [&, cb](Result<ObjectInfo> res) {
        called = true;
        cb(std::move(res));
      });
      returned_before_callback = !called.load();
    });
    CHECK(r.ok());
    CHECK(returned_before_callback);
    CHECK(std::chrono::steady_clock::now() - start >= 50ms);
    f.store.SetLatency(Operation::kHeadObject, 0ms);
  }

  TEST_CASE("FaultInjectingStore: injected failures are delivered on another thread") {
    Fixture f;
    f.store.FailNext(Operation::kRestoreObject, 1, Status::Unavailable("x"));
    std::thread::id callback_thread;
    Result<RestoreOutcome> r = Await<RestoreOutcome>([&](auto cb) {
      f.store.RestoreObject({.bucket = "b", .key = "k"}, [&, cb](Result<RestoreOutcome> res) {
        callback_thread = std::this_thread::get_id();
        cb(std::move(res));
      });
    });
    CHECK(r.status().code() == StatusCode::kUnavailable);
    CHECK(callback_thread != std::this_thread::get_id());
    CHECK(f.fake->CallCount(Operation::kRestoreObject) == 0);
  }

  TEST_CASE("FaultInjectingStore: destruction runs delayed calls") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->PutObjectForTest("b", "k", "v");
    std::atomic<int> calls{0};
    {
      FaultInjectingStore store(fake);
      store.SetLatency(Operation::kHeadObject, 10s);
      store.HeadObject({"b", "k"}, [&](Result<ObjectInfo>) { ++calls; });
    }
    fake->WaitIdle();
    CHECK(calls.load() == 1);
  }
}

}  // namespace
}  // namespace reelfs::s3

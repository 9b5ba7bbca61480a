#include "s3/fake/fault_injecting_store.h"

#include <atomic>
#include <chrono>
#include <future>
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

  TEST_CASE("FaultInjectingStore: UploadPartCopy faults see the source, range and part") {
    Fixture f;
    f.fake->PutObjectForTest("b", "src", "0123456789");
    auto id = Await<std::string>(
        [&](auto cb) { f.store.CreateMultipartUpload({.bucket = "b", .key = "dst"}, cb); });
    REQUIRE(id.ok());
    std::vector<RequestInfo> seen;
    f.store.SetFault(Operation::kUploadPartCopy,
                     [&](const RequestInfo& r) -> std::optional<Status> {
                       seen.push_back(r);
                       if (r.part_number == 2) return Status::Unavailable("injected 503");
                       return std::nullopt;
                     });
    auto copy = [&](int n) {
      UploadPartCopyRequest r{.source_bucket = "b",
                              .source_key = "src",
                              .source_range = ByteRange{static_cast<uint64_t>(n), 3},
                              .bucket = "b",
                              .key = "dst",
                              .upload_id = *id,
                              .part_number = n};
      return Await<std::string>([&](auto cb) { f.store.UploadPartCopy(r, cb); });
    };
    CHECK(copy(1).ok());
    CHECK(copy(2).status().code() == StatusCode::kUnavailable);
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].key == "src");
    CHECK(seen[1].bucket == "b");
    CHECK(seen[1].part_number == 2);
    CHECK(seen[1].range == std::optional<ByteRange>(ByteRange{2, 3}));
    CHECK(f.fake->CallCount(Operation::kUploadPartCopy) == 1);  // the injected one never arrived
    f.store.FailNext(Operation::kUploadPartCopy, 1, Status::PermissionDenied("injected"));
    CHECK(copy(3).status().code() == StatusCode::kPermissionDenied);
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

  TEST_CASE("FaultInjectingStore::FailGetObjectAfterBytes breaks a body part way") {
    Fixture f;
    f.fake->PutObjectForTest("b", "k", std::string("0123456789abcdef"));
    f.store.FailGetObjectAfterBytes(2, 5, Status::Unavailable("connection reset"));

    // Buffer: the first 5 bytes land, then the injected failure.
    Result<GetObjectResult> r = f.Get();
    CHECK(r.status().code() == StatusCode::kUnavailable);
    CHECK(r.status().message() == "connection reset");
    CHECK(std::string(reinterpret_cast<const char*>(f.storage.data()), 5) == "01234");
    CHECK(f.storage[5] == std::byte{0});

    // Sink, with a range: 5 bytes of the range, in order, then the failure.
    std::string got;
    Result<GetObjectResult> s = Await<GetObjectResult>([&](auto cb) {
      f.store.GetObject({.bucket = "b",
                         .key = "k",
                         .range = ByteRange{4, 10},
                         .sink =
                             [&](std::span<const std::byte> chunk) {
                               got.append(reinterpret_cast<const char*>(chunk.data()),
                                          chunk.size());
                               return Status::Ok();
                             }},
                        cb);
    });
    CHECK(s.status().code() == StatusCode::kUnavailable);
    CHECK(got == "45678");
    CHECK(f.store.InjectedCount(Operation::kGetObject) == 2);
    CHECK(f.fake->CallCount(Operation::kGetObject) == 2);  // both reached the store

    // The count is used up: the next call reads the whole body (the resume an upper layer does).
    Result<GetObjectResult> whole = f.Get(ByteRange{5, 11});
    REQUIRE(whole.ok());
    CHECK(whole->bytes == 11);
    CHECK(std::string(reinterpret_cast<const char*>(f.storage.data()), 11) == "56789abcdef");
  }

  TEST_CASE("FaultInjectingStore::FailGetObjectAfterBytes: a short body still fails") {
    Fixture f;  // "payload": 7 bytes
    f.store.FailGetObjectAfterBytes(1, 100, Status::Unavailable("reset"));
    Result<GetObjectResult> r = f.Get();
    CHECK(r.status().code() == StatusCode::kUnavailable);
    CHECK(std::string(reinterpret_cast<const char*>(f.storage.data()), 7) == "payload");
    f.store.FailGetObjectAfterBytes(1, 3, Status::Unavailable("reset"));
    f.store.ClearFaults();
    CHECK(f.Get().ok());
  }

  TEST_CASE("FaultInjectingStore: a callback may destroy the decorator") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->PutObjectForTest("b", "k", "v");
    auto store = std::make_unique<FaultInjectingStore>(fake);
    FaultInjectingStore* raw = store.get();
    std::atomic<int> delayed{0};
    std::promise<void> destroyed;
    // The delayed call is still held when the first callback destroys the decorator: it must
    // run (once) during the destruction, not after the decorator is gone.
    raw->SetLatency(Operation::kHeadObject, 10s);
    raw->HeadObject({"b", "k"}, [&](Result<ObjectInfo>) { ++delayed; });
    raw->FailNext(Operation::kGetObject, 1, Status::Unavailable("injected"));
    raw->GetObject({.bucket = "b", .key = "k", .buffer = {}}, [&](Result<GetObjectResult>) {
      store.reset();  // ~FaultInjectingStore on its own worker thread
      destroyed.set_value();
    });
    REQUIRE(destroyed.get_future().wait_for(5s) == std::future_status::ready);
    fake->WaitIdle();
    CHECK(delayed.load() == 1);
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

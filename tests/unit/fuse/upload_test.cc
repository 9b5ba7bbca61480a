// Upload against the fake store: the part schedule, back-pressure, failures and aborts.
// The stack is Upload -> RecordingStore (records the write requests and can hold UploadParts until
// the test releases them) -> FaultInjectingStore -> FakeObjectStore (S3's 5 MiB minimum part
// size, so a short part that is not the last one fails the COMPLETE as it would on S3).
#include "fuse/core/upload.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/forwarding_store.h"
#include "tests/fakes/store_calls.h"

namespace reelfs::fuse {
namespace {

using s3::FakeObjectStore;
using s3::Operation;
using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr auto kPatience = 20s;  // how long a test waits for an answer before failing

// Records UploadPart, CreateMultipartUpload, PutObject and AbortMultipartUpload calls; while
// holding, UploadParts wait (unforwarded) until the test releases them.
class RecordingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  struct PartCall {
    int number = 0;
    uint64_t bytes = 0;
  };

  void UploadPart(const s3::UploadPartRequest& req, s3::Callback<std::string> done) override {
    // Counted after the Upload has handled the answer, so a test that sees the count sees its
    // effects.
    s3::Callback<std::string> counted = [this, done = std::move(done)](Result<std::string> r) {
      done(std::move(r));
      std::lock_guard lock(mutex_);
      ++parts_answered_;
    };
    {
      std::lock_guard lock(mutex_);
      parts_.push_back({req.part_number, req.body.size()});
      if (holding_) {
        held_.push_back({req, std::move(counted)});
        max_held_ = std::max(max_held_, held_.size());
        return;
      }
    }
    inner_->UploadPart(req, std::move(counted));
  }
  void CreateMultipartUpload(const s3::CreateMultipartUploadRequest& req,
                             s3::Callback<std::string> done) override {
    {
      std::lock_guard lock(mutex_);
      ++creates_;
    }
    inner_->CreateMultipartUpload(req, std::move(done));
  }
  void PutObject(const s3::PutObjectRequest& req, s3::Callback<std::string> done) override {
    {
      std::lock_guard lock(mutex_);
      ++puts_;
    }
    inner_->PutObject(req, std::move(done));
  }
  void AbortMultipartUpload(const s3::AbortMultipartUploadRequest& req,
                            s3::StatusCallback done) override {
    // Recorded before the Upload sees it: Finish answers right after the abort does.
    inner_->AbortMultipartUpload(req, [this, done = std::move(done)](Status status) {
      {
        std::lock_guard lock(mutex_);
        aborts_.push_back(status);
      }
      done(std::move(status));
    });
  }

  void Hold() {
    std::lock_guard lock(mutex_);
    holding_ = true;
  }
  // Forwards the oldest held UploadPart.
  void ReleaseOne() {
    Held held;
    {
      std::lock_guard lock(mutex_);
      REQUIRE(!held_.empty());
      held = std::move(held_.front());
      held_.pop_front();
    }
    inner_->UploadPart(held.req, std::move(held.done));
  }
  // Stops holding and forwards everything held.
  void ReleaseAll() {
    std::deque<Held> held;
    {
      std::lock_guard lock(mutex_);
      holding_ = false;
      held.swap(held_);
    }
    for (Held& h : held) inner_->UploadPart(h.req, std::move(h.done));
  }

  size_t held() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  size_t max_held() {
    std::lock_guard lock(mutex_);
    return max_held_;
  }
  size_t parts_answered() {
    std::lock_guard lock(mutex_);
    return parts_answered_;
  }
  std::vector<PartCall> parts() {
    std::lock_guard lock(mutex_);
    return parts_;
  }
  int creates() {
    std::lock_guard lock(mutex_);
    return creates_;
  }
  int puts() {
    std::lock_guard lock(mutex_);
    return puts_;
  }
  std::vector<Status> aborts() {
    std::lock_guard lock(mutex_);
    return aborts_;
  }

 private:
  struct Held {
    s3::UploadPartRequest req;
    s3::Callback<std::string> done;
  };
  std::mutex mutex_;
  bool holding_ = false;
  std::deque<Held> held_;
  size_t max_held_ = 0;
  size_t parts_answered_ = 0;
  std::vector<PartCall> parts_;
  int creates_ = 0;
  int puts_ = 0;
  std::vector<Status> aborts_;
};

struct Fixture {
  explicit Fixture(uint64_t budget_limit = 1 * kGiB,
                   s3::FakeObjectStoreOptions::CallbackMode mode =
                       s3::FakeObjectStoreOptions::CallbackMode::kWorkerThread)
      : fake(std::make_shared<FakeObjectStore>(s3::FakeObjectStoreOptions{
            .callback_mode = mode, .min_part_size = s3::kS3MinPartSize})),
        faults(std::make_shared<s3::FaultInjectingStore>(fake)),
        store(std::make_shared<RecordingStore>(faults)),
        budget(std::make_shared<MemoryBudget>(budget_limit)) {
    fake->CreateBucketForTest("b");
  }
  ~Fixture() {
    // Nothing may stay held: the recorder's callbacks point at it.
    store->ReleaseAll();
    fake->WaitIdle();
  }

  std::shared_ptr<Upload> Make(const std::string& key, uint64_t part_size = kMinPartSize,
                               uint32_t max_in_flight = 4, std::string content_type = "") {
    Upload::Options options;
    options.part_size = part_size;
    options.max_in_flight = max_in_flight;
    options.content_type = std::move(content_type);
    return Upload::Create(store, budget, "b", key, options, clock);
  }

  // The stored object's bytes, or its error.
  Result<std::vector<std::byte>> Read(const std::string& key) {
    return reelfs::testing::GetBytes(*fake, "b", key, std::nullopt, 64 * kMiB);
  }
  Result<s3::ObjectInfo> Head(const std::string& key) {
    const s3::HeadObjectRequest req{"b", key};
    return s3::Await<s3::ObjectInfo>([&](auto cb) { fake->HeadObject(req, cb); });
  }

  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<s3::FaultInjectingStore> faults;
  std::shared_ptr<RecordingStore> store;
  std::shared_ptr<MemoryBudget> budget;
  reelfs::testing::FakeClock clock;
};

std::vector<std::byte> Pattern(uint64_t size, unsigned seed = 1) {
  std::vector<std::byte> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = std::byte((i * 131 + i / 4099 + seed) & 0xff);
  return out;
}

std::future<Status> StartWrite(Upload& upload, uint64_t offset, std::span<const std::byte> data) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> future = promise->get_future();
  upload.Write(offset, data, [promise](Status s) { promise->set_value(std::move(s)); });
  return future;
}

bool Ready(std::future<Status>& f) { return f.wait_for(0s) == std::future_status::ready; }

Status Get(std::future<Status>& f) {
  REQUIRE(f.wait_for(kPatience) == std::future_status::ready);
  return f.get();
}

Status WriteNow(Upload& upload, uint64_t offset, std::span<const std::byte> data) {
  std::future<Status> f = StartWrite(upload, offset, data);
  return Get(f);
}

// Writes `data` in `chunk`-byte writes; the first error.
Status WriteAll(Upload& upload, std::span<const std::byte> data, uint64_t chunk) {
  for (uint64_t at = 0; at < data.size(); at += chunk) {
    Status s = WriteNow(upload, at, data.subspan(at, std::min<uint64_t>(chunk, data.size() - at)));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<s3::ObjectInfo> FinishNow(Upload& upload) {
  auto promise = std::make_shared<std::promise<Result<s3::ObjectInfo>>>();
  auto future = promise->get_future();
  upload.Finish([promise](Result<s3::ObjectInfo> r) { promise->set_value(std::move(r)); });
  REQUIRE(future.wait_for(kPatience) == std::future_status::ready);
  return future.get();
}

template <class Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

TEST_CASE("PartSize: the base for 1000 parts, doubling every 1000, capped at 5 GiB") {
  constexpr uint64_t kBase = 8 * kMiB;
  CHECK(PartSize(1, kBase) == kBase);
  CHECK(PartSize(1000, kBase) == kBase);
  CHECK(PartSize(1001, kBase) == 2 * kBase);
  CHECK(PartSize(2000, kBase) == 2 * kBase);
  CHECK(PartSize(2001, kBase) == 4 * kBase);
  CHECK(PartSize(9000, kBase) == 256 * kBase);
  CHECK(PartSize(9001, kBase) == 512 * kBase);
  CHECK(PartSize(9001, kBase) == 4 * kGiB);
  CHECK(PartSize(10000, kBase) == 4 * kGiB);
  CHECK(PartSize(10000, 64 * kMiB) == kMaxPartSize);  // 32 GiB before the cap
  CHECK(PartSize(1, 6 * kGiB) == kMaxPartSize);
  CHECK(PartSize(1, kMaxPartSize) == kMaxPartSize);

  uint64_t total = 0;
  for (uint32_t n = 1; n <= kMaxParts; ++n) total += PartSize(n, kBase);
  CHECK(total >= kMaxObjectSize);  // 8 MiB parts reach S3's 5 TiB limit within 10 000 parts
  uint64_t total_min = 0;
  for (uint32_t n = 1; n <= kMaxParts; ++n) total_min += PartSize(n, kMinPartSize);
  CHECK(total_min < kMaxObjectSize);  // 5 MiB parts run out of part numbers first
}

TEST_CASE("a small file written in several writes is one PutObject") {
  Fixture f;
  // A create would fail the upload: proves there is none.
  f.faults->FailNext(Operation::kCreateMultipartUpload, 1, Status::Internal("no create expected"));
  auto up = f.Make("small.txt", kMinPartSize, 4, "text/plain");
  const std::vector<std::byte> data = Pattern(4 * kMiB + 1001);
  std::span<const std::byte> all(data);
  CHECK(WriteNow(*up, 0, all.first(1000)).ok());
  CHECK(WriteNow(*up, 1000, all.subspan(1000, 1)).ok());
  CHECK(WriteNow(*up, 1001, all.subspan(1001)).ok());
  CHECK(up->size() == data.size());
  CHECK(f.fake->CallCount(Operation::kPutObject) == 0);  // nothing visible before Finish

  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  CHECK(f.store->creates() == 0);
  CHECK(f.store->puts() == 1);
  CHECK(f.faults->InjectedCount(Operation::kCreateMultipartUpload) == 0);
  CHECK(up->parts_started() == 0);
  CHECK(up->finished());

  Result<std::vector<std::byte>> stored = f.Read("small.txt");
  REQUIRE(stored.ok());
  CHECK(*stored == data);
  Result<s3::ObjectInfo> head = f.Head("small.txt");
  REQUIRE(head.ok());
  CHECK(info->key == "small.txt");
  CHECK(info->size == data.size());
  CHECK(info->etag == head->etag);
  CHECK(head->size == data.size());
  CHECK(head->content_type == "text/plain");
  CHECK(info->last_modified == f.clock.WallNow());
  CHECK(f.budget->used() == 0);
}

TEST_CASE("a file with no writes is an empty object") {
  Fixture f;
  auto up = f.Make("empty");
  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  CHECK(info->size == 0);
  CHECK(info->etag == "d41d8cd98f00b204e9800998ecf8427e");  // MD5 of nothing
  Result<std::vector<std::byte>> stored = f.Read("empty");
  REQUIRE(stored.ok());
  CHECK(stored->empty());
  CHECK(f.store->creates() == 0);
  CHECK(f.budget->peak() == 0);  // no buffer was ever allocated
}

TEST_CASE("multipart: odd-sized writes across 5 MiB parts, both callback modes") {
  using Mode = s3::FakeObjectStoreOptions::CallbackMode;
  for (Mode mode : {Mode::kWorkerThread, Mode::kInline}) {
    CAPTURE(static_cast<int>(mode));
    Fixture f(1 * kGiB, mode);
    auto up = f.Make("big");
    const std::vector<std::byte> data = Pattern(23 * kMiB + 17, 7);
    REQUIRE(WriteAll(*up, data, kMiB + 3).ok());
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE(info.ok());
    CHECK(info->size == data.size());
    CHECK(info->etag.ends_with("-5"));
    CHECK(up->parts_started() == 5);

    const std::vector<RecordingStore::PartCall> parts = f.store->parts();
    REQUIRE(parts.size() == 5);
    for (int i = 0; i < 4; ++i) {
      CHECK(parts[i].number == i + 1);
      CHECK(parts[i].bytes == 5 * kMiB);
    }
    CHECK(parts[4].number == 5);
    CHECK(parts[4].bytes == 3 * kMiB + 17);
    CHECK(f.store->creates() == 1);
    CHECK(f.store->puts() == 0);

    Result<std::vector<std::byte>> stored = f.Read("big");
    REQUIRE(stored.ok());
    CHECK(*stored == data);
    Result<s3::ObjectInfo> head = f.Head("big");
    REQUIRE(head.ok());
    CHECK(head->etag == info->etag);
    CHECK(f.budget->used() == 0);
    CHECK(f.budget->peak() <= 6 * 5 * kMiB);  // max_in_flight parts, one waiting, one filling
  }
}

TEST_CASE("multipart: a size that is an exact multiple of the part size sends no empty part") {
  Fixture f;
  auto up = f.Make("exact");
  const std::vector<std::byte> data = Pattern(10 * kMiB, 3);
  REQUIRE(WriteAll(*up, data, kMiB + 3).ok());
  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  CHECK(info->etag.ends_with("-2"));
  const std::vector<RecordingStore::PartCall> parts = f.store->parts();
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].bytes == 5 * kMiB);
  Result<std::vector<std::byte>> stored = f.Read("exact");
  REQUIRE(stored.ok());
  CHECK(*stored == data);
  CHECK(f.budget->used() == 0);
}

TEST_CASE("a write at the wrong offset is refused and changes nothing") {
  Fixture f;
  auto up = f.Make("seq");
  const std::vector<std::byte> data = Pattern(6 * kMiB, 5);
  std::span<const std::byte> all(data);
  REQUIRE(WriteNow(*up, 0, all.first(100)).ok());

  Status behind = WriteNow(*up, 50, all.subspan(50, 10));
  CHECK(behind.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(behind.message(), "offset 50"));
  CHECK(Contains(behind.message(), "offset 100"));
  CHECK(Contains(behind.message(), "'seq'"));
  Status ahead = WriteNow(*up, 200, all.subspan(200, 10));
  CHECK(ahead.code() == StatusCode::kInvalidArgument);
  CHECK(up->size() == 100);

  REQUIRE(WriteNow(*up, 100, all.subspan(100)).ok());
  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  Result<std::vector<std::byte>> stored = f.Read("seq");
  REQUIRE(stored.ok());
  CHECK(*stored == data);
}

TEST_CASE("back-pressure: max_in_flight parts on the wire hold the write that filled the next") {
  Fixture f;
  f.store->Hold();
  auto up = f.Make("bp", kMinPartSize, 2);
  const std::vector<std::byte> data = Pattern(4 * 5 * kMiB + 100, 9);
  std::span<const std::byte> all(data);
  auto part = [&](int i) { return all.subspan(i * 5 * kMiB, 5 * kMiB); };

  std::future<Status> w1 = StartWrite(*up, 0, part(0));
  CHECK(Get(w1).ok());  // one part outstanding: answered at once
  REQUIRE(WaitFor([&] { return f.store->held() == 1; }));

  std::future<Status> w2 = StartWrite(*up, 5 * kMiB, part(1));
  REQUIRE(WaitFor([&] { return f.store->held() == 2; }));
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(Ready(w2));
  f.store->ReleaseOne();
  CHECK(Get(w2).ok());

  // Two more full parts: the 4th waits for a slot, and both writes wait for the parts.
  std::future<Status> w3 = StartWrite(*up, 10 * kMiB, part(2));
  std::future<Status> w4 = StartWrite(*up, 15 * kMiB, part(3));
  REQUIRE(WaitFor([&] { return f.store->held() == 2; }));
  std::this_thread::sleep_for(20ms);
  CHECK(f.store->held() == 2);
  CHECK_FALSE(Ready(w3));
  CHECK_FALSE(Ready(w4));
  f.store->ReleaseOne();  // part 2 answers, part 4 goes out: still two outstanding
  REQUIRE(WaitFor([&] { return f.store->parts_answered() == 2 && f.store->held() == 2; }));
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(Ready(w3));
  f.store->ReleaseOne();
  CHECK(Get(w3).ok());
  CHECK(Get(w4).ok());
  CHECK(f.store->max_held() == 2);

  CHECK(WriteNow(*up, 20 * kMiB, all.subspan(20 * kMiB)).ok());  // fills nothing: at once
  f.store->ReleaseAll();
  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  Result<std::vector<std::byte>> stored = f.Read("bp");
  REQUIRE(stored.ok());
  CHECK(*stored == data);
  CHECK(f.budget->used() == 0);
}

TEST_CASE("back-pressure: over the memory budget a write waits for this upload's parts") {
  Fixture f(1 * kMiB);  // every part buffer is over the limit
  f.store->Hold();
  auto up = f.Make("budget");
  const std::vector<std::byte> data = Pattern(5 * kMiB + 100, 11);
  std::span<const std::byte> all(data);

  std::future<Status> w1 = StartWrite(*up, 0, all.first(5 * kMiB));
  REQUIRE(WaitFor([&] { return f.store->held() == 1; }));
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(Ready(w1));
  f.store->ReleaseOne();
  CHECK(Get(w1).ok());
  CHECK(f.budget->used() == 0);

  // Over the limit again (a new buffer) but with nothing in flight: answered at once.
  CHECK(WriteNow(*up, 5 * kMiB, all.subspan(5 * kMiB)).ok());
  CHECK(f.budget->used() > f.budget->limit());
  f.store->ReleaseAll();
  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE(info.ok());
  Result<std::vector<std::byte>> stored = f.Read("budget");
  REQUIRE(stored.ok());
  CHECK(*stored == data);
  CHECK(f.budget->used() == 0);
}

TEST_CASE("a failed UploadPart sticks: later writes and Finish answer it, the upload is aborted") {
  Fixture f;
  f.faults->FailNext(Operation::kUploadPart, 1, Status::PermissionDenied("injected 403"));
  auto up = f.Make("denied");
  const std::vector<std::byte> data = Pattern(12 * kMiB, 13);
  std::span<const std::byte> all(data);
  CHECK(WriteNow(*up, 0, all.first(6 * kMiB)).ok());  // part 1 goes out
  REQUIRE(WaitFor([&] { return f.store->parts_answered() == 1; }));

  Status later = WriteNow(*up, 6 * kMiB, all.subspan(6 * kMiB, kMiB));
  CHECK(later.code() == StatusCode::kPermissionDenied);
  CHECK(Contains(later.message(), "UploadPart 1 of 'denied'"));
  CHECK(up->size() == 6 * kMiB);

  Result<s3::ObjectInfo> info = FinishNow(*up);
  REQUIRE_FALSE(info.ok());
  CHECK(info.status().code() == StatusCode::kPermissionDenied);
  const std::vector<Status> aborts = f.store->aborts();
  REQUIRE(aborts.size() == 1);
  CHECK(aborts[0].ok());  // the upload existed and is gone
  CHECK(f.fake->CallCount(Operation::kCompleteMultipartUpload) == 0);
  CHECK(f.Head("denied").status().code() == StatusCode::kNotFound);
  CHECK(f.budget->used() == 0);

  // A second Finish answers the same.
  Result<s3::ObjectInfo> again = FinishNow(*up);
  CHECK(again.status().code() == StatusCode::kPermissionDenied);
  CHECK(f.store->aborts().size() == 1);
}

TEST_CASE("507 InsufficientStorage keeps its reason (kNoSpace) through Finish") {
  const Status no_space(StatusCode::kFailedPrecondition, StatusReason::kNoSpace,
                        "injected 507 InsufficientStorage");
  Fixture f;
  const std::vector<std::byte> data = Pattern(5 * kMiB + 1, 17);

  SUBCASE("UploadPart") {
    f.faults->FailNext(Operation::kUploadPart, 1, no_space);
    auto up = f.Make("full");
    Status w = WriteAll(*up, data, kMiB);
    CHECK((w.ok() || w.reason() == StatusReason::kNoSpace));  // the failure may come first
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE_FALSE(info.ok());
    CHECK(info.status().reason() == StatusReason::kNoSpace);
    CHECK(info.status().code() == StatusCode::kFailedPrecondition);
    CHECK(f.store->aborts().size() == 1);
  }
  SUBCASE("CompleteMultipartUpload") {
    f.faults->FailNext(Operation::kCompleteMultipartUpload, 1, no_space);
    auto up = f.Make("full");
    REQUIRE(WriteAll(*up, data, kMiB).ok());
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE_FALSE(info.ok());
    CHECK(info.status().reason() == StatusReason::kNoSpace);
    CHECK(Contains(info.status().message(), "CompleteMultipartUpload of 'full'"));
    const std::vector<Status> aborts = f.store->aborts();
    REQUIRE(aborts.size() == 1);
    CHECK(aborts[0].ok());
  }
  SUBCASE("PutObject") {
    f.faults->FailNext(Operation::kPutObject, 1, no_space);
    auto up = f.Make("full");
    REQUIRE(WriteNow(*up, 0, std::span(data).first(100)).ok());
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE_FALSE(info.ok());
    CHECK(info.status().reason() == StatusReason::kNoSpace);
    CHECK(Contains(info.status().message(), "PutObject of 'full'"));
    CHECK(f.store->aborts().empty());  // no multipart upload to abort
  }
  CHECK(f.Head("full").status().code() == StatusCode::kNotFound);
  CHECK(f.budget->used() == 0);
}

TEST_CASE(
    "Abort with parts in flight: held writes cancelled, the upload aborted once they answer") {
  Fixture f;
  f.store->Hold();
  auto up = f.Make("dropped", kMinPartSize, 2);
  const std::vector<std::byte> data = Pattern(11 * kMiB, 19);
  std::span<const std::byte> all(data);
  CHECK(WriteNow(*up, 0, all.first(5 * kMiB)).ok());
  std::future<Status> w2 = StartWrite(*up, 5 * kMiB, all.subspan(5 * kMiB, 5 * kMiB));
  std::future<Status> w3 = StartWrite(*up, 10 * kMiB, all.subspan(10 * kMiB));  // behind w2
  REQUIRE(WaitFor([&] { return f.store->held() == 2; }));
  CHECK_FALSE(Ready(w2));
  CHECK_FALSE(Ready(w3));

  up->Abort();
  CHECK(Get(w2).code() == StatusCode::kCancelled);
  CHECK(Get(w3).code() == StatusCode::kCancelled);
  CHECK(up->finished());
  CHECK(f.budget->used() == 10 * kMiB);  // the two parts on the wire; the rest is dropped
  CHECK(f.store->aborts().empty());      // not while parts are in flight
  Status after = WriteNow(*up, 11 * kMiB, all.first(1));
  CHECK(after.reason() == StatusReason::kBadHandle);
  up->Abort();  // idempotent

  f.store->ReleaseAll();
  REQUIRE(WaitFor([&] { return f.store->aborts().size() == 1; }));
  CHECK(f.store->aborts()[0].ok());
  Result<s3::ObjectInfo> info = FinishNow(*up);
  CHECK(info.status().code() == StatusCode::kCancelled);
  CHECK(f.budget->used() == 0);
  CHECK(f.store->aborts().size() == 1);
  CHECK(f.fake->CallCount(Operation::kCompleteMultipartUpload) == 0);
  CHECK(f.Head("dropped").status().code() == StatusCode::kNotFound);
}

TEST_CASE("Abort before any part sends nothing and releases the buffer") {
  Fixture f;
  auto up = f.Make("never");
  const std::vector<std::byte> data = Pattern(1000);
  REQUIRE(WriteNow(*up, 0, data).ok());
  CHECK(f.budget->used() == kMinPartSize);
  up->Abort();
  CHECK(f.budget->used() == 0);
  f.fake->WaitIdle();
  CHECK(f.store->creates() == 0);
  CHECK(f.store->puts() == 0);
  CHECK(f.store->aborts().empty());
}

TEST_CASE("after Finish: writes are a bad handle, Finish repeats its answer, Abort does nothing") {
  Fixture f;
  auto up = f.Make("done");
  const std::vector<std::byte> data = Pattern(300);
  REQUIRE(WriteNow(*up, 0, data).ok());
  Result<s3::ObjectInfo> first = FinishNow(*up);
  REQUIRE(first.ok());

  Status w = WriteNow(*up, 300, data);
  CHECK(w.code() == StatusCode::kFailedPrecondition);
  CHECK(w.reason() == StatusReason::kBadHandle);
  CHECK(Contains(w.message(), "upload of 'done' finished"));
  Result<s3::ObjectInfo> second = FinishNow(*up);
  REQUIRE(second.ok());
  CHECK(second->etag == first->etag);
  up->Abort();
  f.fake->WaitIdle();
  CHECK(f.Head("done").ok());
  CHECK(f.store->puts() == 1);
  CHECK(f.store->aborts().empty());
}

TEST_CASE("Truncate: to 0 before the first part drops the bytes, after it is refused") {
  Fixture f;
  SUBCASE("before the first part") {
    auto up = f.Make("trunc");
    const std::vector<std::byte> junk = Pattern(1000, 23);
    REQUIRE(WriteNow(*up, 0, junk).ok());
    CHECK(up->Truncate(1000).ok());  // the current size: a no-op
    CHECK(up->Truncate(0).ok());
    CHECK(up->size() == 0);
    CHECK(f.budget->used() == 0);
    const std::vector<std::byte> kept = Pattern(6 * kMiB, 29);  // and then multipart
    REQUIRE(WriteAll(*up, kept, kMiB).ok());
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE(info.ok());
    Result<std::vector<std::byte>> stored = f.Read("trunc");
    REQUIRE(stored.ok());
    CHECK(*stored == kept);
  }
  SUBCASE("after a part was sent") {
    auto up = f.Make("trunc");
    const std::vector<std::byte> data = Pattern(6 * kMiB, 31);
    REQUIRE(WriteNow(*up, 0, data).ok());
    Status zero = up->Truncate(0);
    CHECK(zero.code() == StatusCode::kPermissionDenied);
    CHECK(zero.reason() == StatusReason::kNotPermitted);
    CHECK(Contains(zero.message(), "'trunc'"));
    CHECK(up->Truncate(10).code() == StatusCode::kPermissionDenied);
    CHECK(up->Truncate(6 * kMiB).ok());
    CHECK(up->size() == 6 * kMiB);
    Result<s3::ObjectInfo> info = FinishNow(*up);
    REQUIRE(info.ok());
    Result<std::vector<std::byte>> stored = f.Read("trunc");
    REQUIRE(stored.ok());
    CHECK(*stored == data);
  }
  CHECK(f.budget->used() == 0);
}

TEST_CASE("an Upload dropped without Finish releases its budget and calls nothing") {
  Fixture f;
  auto up = f.Make("gone");
  const std::vector<std::byte> data = Pattern(1000);
  REQUIRE(WriteNow(*up, 0, data).ok());
  CHECK(f.budget->used() > 0);
  up.reset();
  CHECK(f.budget->used() == 0);
  f.fake->WaitIdle();
  CHECK(f.store->creates() == 0);
  CHECK(f.store->puts() == 0);
}

}  // namespace
}  // namespace reelfs::fuse

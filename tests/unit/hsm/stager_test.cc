// hsm::Stager against the in-memory store (+ the fault-injecting decorator) on a FakeClock: the
// plan's order, what Submit sends and how it takes each answer, and Wait's endings.
#include "hsm/stager.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/forwarding_store.h"
#include "tests/fakes/misbehaving_store.h"

namespace reelfs::hsm {
namespace {

using namespace std::chrono_literals;
using s3::Operation;

constexpr const char* kBucket = "bkt";
constexpr const char* kEndpoint = "http://127.0.0.1:9";

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "d/%04d", i);
  return buf;
}

// `archived` GLACIER objects d/0000.. and `online` STANDARD ones o/0000..
std::shared_ptr<s3::FakeObjectStore> MakeStore(int archived, int online,
                                               s3::FakeObjectStoreOptions options = {}) {
  auto store = std::make_shared<s3::FakeObjectStore>(options);
  store->CreateBucketForTest(kBucket);
  for (int i = 0; i < archived; ++i) {
    store->PutObjectForTest(kBucket, Key(i), std::string(100 + i, 'x'), "GLACIER");
  }
  for (int i = 0; i < online; ++i) {
    store->PutObjectForTest(kBucket, "o/" + std::to_string(i), "online", "STANDARD");
  }
  return store;
}

StageObject Obj(std::string key, State state, std::optional<TapeHint> hint = {}) {
  StageObject o;
  o.key = std::move(key);
  o.state = state;
  o.size = 10;
  o.hint = std::move(hint);
  return o;
}

std::vector<std::string> KeysOf(const std::vector<StageObject>& objects,
                                const std::vector<size_t>& indices) {
  std::vector<std::string> out;
  for (size_t i : indices) out.push_back(objects[i].key);
  return out;
}

// Forwards to a store and records the most RestoreObject + HEAD calls outstanding at once.
class InFlightProbe final : public testing::ForwardingStore {
 public:
  explicit InFlightProbe(std::shared_ptr<s3::ObjectStore> inner)
      : ForwardingStore(std::move(inner)) {}
  void HeadObject(const s3::HeadObjectRequest& r, s3::Callback<s3::ObjectInfo> d) override {
    Enter();
    inner_->HeadObject(r, [this, d = std::move(d)](Result<s3::ObjectInfo> x) {
      Leave();
      d(std::move(x));
    });
  }
  void RestoreObject(const s3::RestoreObjectRequest& r,
                     s3::Callback<s3::RestoreOutcome> d) override {
    Enter();
    inner_->RestoreObject(r, [this, d = std::move(d)](Result<s3::RestoreOutcome> x) {
      Leave();
      d(std::move(x));
    });
  }
  int max_in_flight() const { return max_.load(); }

 private:
  void Enter() {
    int now = ++in_flight_;
    int seen = max_.load();
    while (now > seen && !max_.compare_exchange_weak(seen, now)) {
    }
  }
  void Leave() { --in_flight_; }
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_{0};
};

struct Fixture {
  explicit Fixture(std::shared_ptr<s3::FakeObjectStore> fake_store, StageOptions options = {})
      : fake(std::move(fake_store)),
        faults(std::make_shared<s3::FaultInjectingStore>(fake)),
        ledger(Ledger::InMemory()) {
    if (options.batch.empty()) options.batch = "test-batch";
    stager = std::make_unique<Stager>(*faults, *ledger, kEndpoint, kBucket, clock, options);
  }
  std::vector<StageObject> EnumerateAll() {
    auto objects = stager->Enumerate({StageTarget{"", true, ""}});
    REQUIRE(objects.ok());
    return std::move(*objects);
  }
  std::optional<LedgerEntry> Entry(const std::string& key) {
    auto e = ledger->Find(LedgerKey{kEndpoint, kBucket, key});
    REQUIRE(e.ok());
    return *e;
  }
  testing::FakeClock clock;
  std::shared_ptr<s3::FakeObjectStore> fake;
  std::shared_ptr<s3::FaultInjectingStore> faults;
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<Stager> stager;
};

uint64_t CountIn(const std::vector<StageObject>& objects, State state) {
  uint64_t n = 0;
  for (const auto& o : objects) n += o.state == state ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("plan: offline objects only, in key order without hints") {
  std::vector<StageObject> objects = {Obj("c", State::kOffline), Obj("a", State::kOffline),
                                      Obj("b", State::kOnline),  Obj("d", State::kStaging),
                                      Obj("e", State::kOffline), Obj("f", State::kRestored),
                                      Obj("g", State::kUnknown)};
  objects[4].error = "refused";
  CHECK(KeysOf(objects, Stager::Plan(objects)) == std::vector<std::string>{"a", "c"});
}

TEST_CASE("plan: by cartridge in order of its first key, then block; unhinted last") {
  auto hint = [](std::string c, uint64_t block) {
    return TapeHint{.cartridge = std::move(c), .block = block};
  };
  // Objects come in key order (as Enumerate returns them); striped over two cartridges.
  std::vector<StageObject> objects = {
      Obj("k0", State::kOffline, hint("T2", 50)),
      Obj("k1", State::kOffline, hint("T1", 9)),
      Obj("k2", State::kOffline, hint("T2", 10)),
      Obj("k3", State::kOffline, hint("T1", 3)),
      Obj("k4", State::kOffline),
      Obj("k5", State::kOnline, hint("T3", 1)),
      Obj("k6", State::kOffline, hint("T3", 7)),
      Obj("k7", State::kOffline, TapeHint{"T1"}),
  };
  CHECK(KeysOf(objects, Stager::Plan(objects)) ==
        std::vector<std::string>{"k2", "k0", "k3", "k1", "k7", "k6", "k4"});
}

TEST_CASE("summary counts objects and bytes per state, failures and cartridges") {
  std::vector<StageObject> objects = {
      Obj("a", State::kOffline, TapeHint{"T1"}), Obj("b", State::kRestored, TapeHint{"T1"}),
      Obj("c", State::kOnline, TapeHint{"T2"}), Obj("d", State::kStaging)};
  objects[0].error = "x";
  objects[1].size = 5;
  StageSummary s = StageSummary::Of(objects);
  CHECK(s.total_objects == 4);
  CHECK(s.total_bytes == 35);
  CHECK(s.objects[static_cast<size_t>(State::kOffline)] == 1);
  CHECK(s.bytes[static_cast<size_t>(State::kRestored)] == 5);
  CHECK(s.failed == 1);
  CHECK(s.cartridges == 2);
  CHECK(s.cartridges_pending == 1);  // T1 still holds an offline object; T2 is done
}

TEST_CASE("enumerate classifies, submit requests every offline object once, in key order") {
  Fixture f(MakeStore(20, 3));
  std::mutex mu;
  std::vector<std::string> order;
  f.faults->SetFault(Operation::kRestoreObject, [&](const s3::RequestInfo& r) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(r.key);
    return std::optional<Status>();
  });
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(objects.size() == 23);
  CHECK(CountIn(objects, State::kOffline) == 20);
  CHECK(CountIn(objects, State::kOnline) == 3);
  CHECK(objects[5].size == 105);

  int progress_calls = 0;
  auto sent = f.stager->Submit(objects, [&](const StageProgress&) { ++progress_calls; });
  REQUIRE(sent.ok());
  CHECK(*sent == 20);
  CHECK(progress_calls >= 1);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 20);
  CHECK(CountIn(objects, State::kStaging) == 20);
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i) want.push_back(Key(i));
  CHECK(order == want);
  auto entry = f.Entry(Key(3));
  REQUIRE(entry.has_value());
  CHECK(entry->phase == LedgerPhase::kRequested);
  CHECK(entry->batch == "test-batch");
  CHECK(entry->attempts == 1);
  CHECK(entry->size == 103);

  // A second stage of the same objects sends nothing: the server says ongoing now.
  std::vector<StageObject> again = f.EnumerateAll();
  CHECK(CountIn(again, State::kStaging) == 20);
  REQUIRE(f.stager->Submit(again, nullptr).ok());
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 20);
}

TEST_CASE("with tape hints in the listing, submission follows cartridges and blocks") {
  Fixture f(MakeStore(12, 0));
  // Striped over three cartridges (object i on T<i mod 3>), later keys at lower blocks.
  for (int i = 0; i < 12; ++i) {
    REQUIRE(f.fake
                ->SetHintsForTest(kBucket, Key(i),
                                  {{"x-reelfs-tape-cartridge", "T" + std::to_string(i % 3)},
                                   {"x-reelfs-tape-block", std::to_string(100 - i)},
                                   {"x-reelfs-tape-position", "wrap=2,lpos=" + std::to_string(i)}})
                .ok());
  }
  std::mutex mu;
  std::vector<std::string> order;
  f.faults->SetFault(Operation::kRestoreObject, [&](const s3::RequestInfo& r) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(r.key);
    return std::optional<Status>();
  });
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(objects[4].hint.has_value());
  CHECK(objects[4].hint->cartridge == "T1");
  CHECK(objects[4].hint->block == 96u);
  CHECK(objects[4].hint->wrap == 2u);
  CHECK(objects[4].hint->lpos == 4u);
  CHECK(StageSummary::Of(objects).cartridges == 3);
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  std::vector<int> want = {9, 6, 3, 0, 10, 7, 4, 1, 11, 8, 5, 2};
  std::vector<std::string> want_keys;
  for (int i : want) want_keys.push_back(Key(i));
  CHECK(order == want_keys);
}

TEST_CASE("an object the ledger says is being staged is not requested again") {
  Fixture f(MakeStore(3, 0));
  LedgerEntry e;
  e.id = LedgerKey{kEndpoint, kBucket, Key(1)};
  e.requested_at = e.updated_at = f.clock.WallNow();
  REQUIRE(f.ledger->Upsert(e).ok());
  std::vector<StageObject> objects = f.EnumerateAll();
  CHECK(objects[1].state == State::kStaging);
  auto sent = f.stager->Submit(objects, nullptr);
  REQUIRE(sent.ok());
  CHECK(*sent == 2);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 2);
}

TEST_CASE("200, 202 and 409 are success") {
  Fixture f(MakeStore(3, 0));
  // d/0001 is already being restored (409), d/0002 already restored (200): a plan made from a
  // stale view still counts them as requested.
  REQUIRE(s3::Await<s3::RestoreOutcome>([&](s3::Callback<s3::RestoreOutcome> cb) {
            f.fake->RestoreObject(s3::RestoreObjectRequest{kBucket, Key(1)}, cb);
          }).ok());
  REQUIRE(f.fake->CompleteRestore(kBucket, Key(2)).ok());
  f.fake->ResetCallCounts();
  std::vector<StageObject> objects = {Obj(Key(0), State::kOffline), Obj(Key(1), State::kOffline),
                                      Obj(Key(2), State::kOffline)};
  auto sent = f.stager->Submit(objects, nullptr);
  REQUIRE(sent.ok());
  CHECK(*sent == 3);
  for (const auto& o : objects) {
    CHECK(o.state == State::kStaging);
    CHECK(o.error.empty());
  }
}

TEST_CASE("503 SlowDown is retried; a permanent refusal is recorded for its object only") {
  StageOptions options;
  Fixture f(MakeStore(6, 0), options);
  f.faults->FailNext(Operation::kRestoreObject, 3,
                     Status(StatusCode::kUnavailable, "Please reduce your request rate",
                            StatusDetail{.http_status = 503, .s3_code = "SlowDown"}));
  f.faults->SetFault(Operation::kRestoreObject, [](const s3::RequestInfo& r) {
    if (r.key == Key(4)) {
      return std::optional<Status>(
          Status(StatusCode::kPermissionDenied, "Access Denied",
                 StatusDetail{.http_status = 403, .s3_code = "AccessDenied"}));
    }
    return std::optional<Status>();
  });
  std::vector<StageObject> objects = f.EnumerateAll();
  auto sent = f.stager->Submit(objects, nullptr);
  REQUIRE(sent.ok());
  CHECK(*sent == 5);
  CHECK(f.faults->InjectedCount(Operation::kRestoreObject) >= 4);  // 3 SlowDown + the refusal(s)
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 5);
  CHECK(objects[4].state == State::kOffline);
  CHECK(objects[4].error.find("AccessDenied") != std::string::npos);
  auto entry = f.Entry(Key(4));
  REQUIRE(entry.has_value());
  CHECK(entry->phase == LedgerPhase::kFailed);
  for (int i : {0, 1, 2, 3, 5}) CHECK(objects[i].state == State::kStaging);
}

TEST_CASE("a server that cannot be reached stops the submission with an error") {
  Fixture f(MakeStore(4, 0));
  std::vector<StageObject> objects = f.EnumerateAll();
  f.faults->FailNext(Operation::kRestoreObject, 1000, Status::Unavailable("connection refused"));
  auto sent = f.stager->Submit(objects, nullptr);
  CHECK(sent.status().code() == StatusCode::kUnavailable);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 0);
}

TEST_CASE("expedited refused as unavailable falls back to standard") {
  StageOptions options;
  options.params.tier = s3::RestoreTier::kExpedited;
  Fixture f(MakeStore(2, 0), options);
  f.faults->FailNext(
      Operation::kRestoreObject, 1,
      Status(StatusCode::kUnavailable, StatusReason::kTierUnavailable, "not available",
             StatusDetail{.http_status = 503, .s3_code = "GlacierExpeditedRetrievalNotAvailable"}));
  std::vector<StageObject> objects = f.EnumerateAll();
  auto sent = f.stager->Submit(objects, nullptr);
  REQUIRE(sent.ok());
  CHECK(*sent == 2);
  auto e0 = f.Entry(Key(0));
  auto e1 = f.Entry(Key(1));
  REQUIRE(e0.has_value());
  REQUIRE(e1.has_value());
  CHECK(e0->tier == s3::RestoreTier::kStandard);  // the refused one went again as Standard
  CHECK(e1->tier == s3::RestoreTier::kExpedited);
}

TEST_CASE("submission is rate-limited on the clock and keeps max_in_flight requests going") {
  StageOptions options;
  options.max_requests_per_second = 10;
  options.max_in_flight = 4;
  auto fake = MakeStore(50, 0);
  auto slow = std::make_shared<s3::FaultInjectingStore>(fake);
  slow->SetLatency(Operation::kRestoreObject, 20ms);
  InFlightProbe probe(slow);
  testing::FakeClock clock;
  auto ledger = Ledger::InMemory();
  Stager stager(probe, *ledger, kEndpoint, kBucket, clock, options);
  auto objects = stager.Enumerate({StageTarget{"d/", true, ""}});
  REQUIRE(objects.ok());
  const Clock::TimePoint before = clock.Now();
  auto sent = stager.Submit(*objects, nullptr);
  REQUIRE(sent.ok());
  CHECK(*sent == 50);
  // 50 requests at 10/s with a burst of 4: at least 4.6 s of the (fake) clock.
  CHECK(clock.Now() - before >= 4600ms);
  CHECK(probe.max_in_flight() <= 4);
}

TEST_CASE("requests overlap up to max_in_flight") {
  StageOptions options;
  options.max_requests_per_second = 0;  // unlimited
  options.max_in_flight = 8;
  auto fake = MakeStore(64, 0);
  auto slow = std::make_shared<s3::FaultInjectingStore>(fake);
  slow->SetLatency(Operation::kRestoreObject, 30ms);
  InFlightProbe probe(slow);
  testing::FakeClock clock;
  auto ledger = Ledger::InMemory();
  Stager stager(probe, *ledger, kEndpoint, kBucket, clock, options);
  auto objects = stager.Enumerate({StageTarget{"d/", true, ""}});
  REQUIRE(objects.ok());
  REQUIRE(stager.Submit(*objects, nullptr).ok());
  CHECK(probe.max_in_flight() <= 8);
  CHECK(probe.max_in_flight() > 1);  // not one request at a time
}

TEST_CASE("wait ends kDone when every object is readable") {
  Fixture f(MakeStore(10, 2, {.restore_completes_immediately = true}));
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  std::vector<StageProgress> seen;
  auto end = f.stager->Wait(objects, Clock::TimePoint::max(),
                            [&](const StageProgress& p) { seen.push_back(p); });
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kDone);
  CHECK(CountIn(objects, State::kRestored) == 10);
  CHECK(CountIn(objects, State::kOnline) == 2);
  REQUIRE(!seen.empty());
  CHECK(seen.back().summary.objects[static_cast<size_t>(State::kRestored)] == 10);
  auto entry = f.Entry(Key(7));
  REQUIRE(entry.has_value());
  CHECK(entry->phase == LedgerPhase::kOnline);
}

TEST_CASE("wait ends kTimedOut at the deadline while restores are still running") {
  Fixture f(MakeStore(5, 0));
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  REQUIRE(f.fake->CompleteRestore(kBucket, Key(2)).ok());  // partial progress
  const Clock::TimePoint deadline = f.clock.Now() + 30s;
  auto end = f.stager->Wait(objects, deadline, nullptr);
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kTimedOut);
  CHECK(f.clock.Now() >= deadline);
  CHECK(objects[2].state == State::kRestored);
  CHECK(CountIn(objects, State::kStaging) == 4);
  // The x-amz-restore text of the last HEAD is kept for `status --json`.
  CHECK(objects[0].restore_header.find("ongoing-request=\"true\"") != std::string::npos);
  CHECK(objects[2].restore_header.find("ongoing-request=\"false\"") != std::string::npos);
}

TEST_CASE("wait ends kFailed for offline objects nobody requested, without requesting them") {
  Fixture f(MakeStore(3, 1));
  std::vector<StageObject> objects = f.EnumerateAll();
  auto end = f.stager->Wait(objects, f.clock.Now() + 1s, nullptr);
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kFailed);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 0);
  CHECK(objects[0].error == "offline and not requested");
  CHECK(objects[3].state == State::kOnline);
  CHECK(objects[3].error.empty());
}

TEST_CASE("wait ends kFailed when a refused object is left, after the rest are readable") {
  Fixture f(MakeStore(4, 0, {.restore_completes_immediately = true}));
  f.faults->SetFault(Operation::kRestoreObject, [](const s3::RequestInfo& r) {
    if (r.key == Key(0)) return std::optional<Status>(Status::PermissionDenied("refused"));
    return std::optional<Status>();
  });
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  auto end = f.stager->Wait(objects, Clock::TimePoint::max(), nullptr);
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kFailed);
  CHECK(CountIn(objects, State::kRestored) == 3);
}

TEST_CASE("an object released before it was read is requested again, up to max_attempts") {
  StageOptions options;
  options.max_attempts = 3;
  Fixture f(MakeStore(2, 0), options);
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  REQUIRE(f.fake->CompleteRestore(kBucket, Key(1)).ok());  // d/0001 comes online and stays
  // After every poll round the copy of d/0000 goes away again (a releaser, or a lost request).
  auto end = f.stager->Wait(objects, Clock::TimePoint::max(), [&](const StageProgress&) {
    REQUIRE(f.fake->ExpireRestore(kBucket, Key(0)).ok());
  });
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kFailed);
  CHECK(objects[1].state == State::kRestored);
  CHECK(objects[0].attempts == 3);
  CHECK(objects[0].error.find("3 attempts") != std::string::npos);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 4);  // d/0000 three times, d/0001 once
  auto entry = f.Entry(Key(0));
  REQUIRE(entry.has_value());
  CHECK(entry->phase == LedgerPhase::kFailed);
  CHECK(entry->attempts == 3);
}

TEST_CASE("a released object requested again comes online: kDone") {
  Fixture f(MakeStore(1, 0));
  std::vector<StageObject> objects = f.EnumerateAll();
  REQUIRE(f.stager->Submit(objects, nullptr).ok());
  int round = 0;
  auto end = f.stager->Wait(objects, Clock::TimePoint::max(), [&](const StageProgress&) {
    ++round;
    // Round 1: the restore is lost; later rounds: the second request completes.
    if (round == 1) REQUIRE(f.fake->ExpireRestore(kBucket, Key(0)).ok());
    if (round == 2) REQUIRE(f.fake->CompleteRestore(kBucket, Key(0)).ok());
  });
  REQUIRE(end.ok());
  CHECK(*end == WaitEnd::kDone);
  CHECK(objects[0].attempts == 2);
  CHECK(f.fake->CallCount(Operation::kRestoreObject) == 2);
}

TEST_CASE("a missing key target is NotFound; a key target is HEADed") {
  Fixture f(MakeStore(2, 0));
  auto missing = f.stager->Enumerate({StageTarget{"nope", false, ""}});
  CHECK(missing.status().code() == StatusCode::kNotFound);
  auto one = f.stager->Enumerate({StageTarget{Key(1), false, "/mnt/d/0001"}});
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].state == State::kOffline);
  CHECK((*one)[0].display == "/mnt/d/0001");
  CHECK((*one)[0].size == 101);
}

}  // namespace reelfs::hsm

namespace reelfs::hsm {
namespace {

// The one paging rule (s3/protocol/list_paging.h) holds for `reelfs stage` too: a server that
// repeats its continuation token, cycles, or truncates without a token fails the listing.
TEST_CASE("enumerate: a listing that would never end fails (kDataLoss) instead of looping") {
  using Fault = testing::MisbehavingStore::Fault;
  for (Fault fault : {Fault::kRepeatToken, Fault::kTokenCycle, Fault::kTruncatedNoToken}) {
    auto bad = std::make_shared<testing::MisbehavingStore>(MakeStore(3, 0));
    bad->fault = fault;
    auto ledger = Ledger::InMemory();
    testing::FakeClock clock;
    StageOptions options;
    options.batch = "b";
    Stager stager(*bad, *ledger, kEndpoint, kBucket, clock, options);
    auto objects = stager.Enumerate({StageTarget{"", true, ""}});
    REQUIRE_FALSE(objects.ok());
    CHECK(objects.status().code() == StatusCode::kDataLoss);
    CHECK(bad->list_calls.load() <= 3);
  }
}

}  // namespace
}  // namespace reelfs::hsm

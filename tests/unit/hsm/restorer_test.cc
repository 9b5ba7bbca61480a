// hsm::Restorer against the in-memory S3 fake (archived objects, restores completed and expired
// by hand), on a FakeTimer: single flight, polling, the releaser race, attempts, deadlines,
// cancellation, the shared ledger, max_in_flight and shutdown.
#include "hsm/restorer.h"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_timer.h"
#include "tests/fakes/forwarding_store.h"

using namespace reelfs;
using namespace reelfs::hsm;
using namespace std::chrono_literals;
using s3::Operation;

namespace {

constexpr const char* kBucket = "b";
constexpr const char* kEndpoint = "http://127.0.0.1:9";
const std::string kData = "bytes that were on tape";

struct TempDir {
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "reelfs-restorer-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

// Answers of WaitOnline/Request, in arrival order. Wait() blocks until n arrived (no time limit:
// only for answers that come from another thread without the fake clock moving).
template <class T>
class Answers {
 public:
  std::function<void(T)> Callback() {
    return [this](T value) {
      // Notified under the lock: a Wait that returns may destroy the answers at once.
      std::lock_guard lock(mutex_);
      values_.push_back(std::move(value));
      cv_.notify_all();
    };
  }
  size_t size() {
    std::lock_guard lock(mutex_);
    return values_.size();
  }
  std::vector<T> Wait(size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return values_.size() >= n; });
    return values_;
  }
  std::vector<T> Get() {
    std::lock_guard lock(mutex_);
    return values_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<T> values_;
};
using InfoAnswers = Answers<Result<s3::ObjectInfo>>;

// Holds HEAD and RestoreObject answers until the test releases them (to see what is in flight),
// and can answer an accepted restore with 200 as versitygw does. Everything else is forwarded.
class HoldingStore final : public testing::ForwardingStore {
 public:
  explicit HoldingStore(std::shared_ptr<s3::FakeObjectStore> inner)
      : ForwardingStore(inner), fake_(std::move(inner)) {}
  bool hold = true;
  bool accepted_as_ok = false;

  size_t held() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  size_t max_held() {
    std::lock_guard lock(mutex_);
    return max_held_;
  }
  // Runs the held answers (those that arrived so far), oldest first.
  void ReleaseAll() {
    fake_->WaitIdle();
    std::vector<std::function<void()>> run;
    {
      std::lock_guard lock(mutex_);
      run.swap(held_);
    }
    for (auto& fn : run) fn();
  }

  void HeadObject(const s3::HeadObjectRequest& req, s3::Callback<s3::ObjectInfo> done) override {
    inner_->HeadObject(req,
                       [this, done](Result<s3::ObjectInfo> r) { Hold([done, r] { done(r); }); });
  }
  void RestoreObject(const s3::RestoreObjectRequest& req,
                     s3::Callback<s3::RestoreOutcome> done) override {
    inner_->RestoreObject(req, [this, done](Result<s3::RestoreOutcome> r) {
      if (accepted_as_ok && r.ok() && *r == s3::RestoreOutcome::kAccepted) {
        r = s3::RestoreOutcome::kOk;
      }
      Hold([done, r] { done(r); });
    });
  }

 private:
  void Hold(std::function<void()> fn) {
    {
      std::lock_guard lock(mutex_);
      if (hold) {
        held_.push_back(std::move(fn));
        max_held_ = std::max(max_held_, held_.size());
        return;
      }
    }
    fn();
  }

  std::shared_ptr<s3::FakeObjectStore> fake_;  // the same store as inner_, for WaitIdle
  std::mutex mutex_;
  std::vector<std::function<void()>> held_;
  size_t max_held_ = 0;
};

struct Fixture {
  Fixture() {
    auto opened = Ledger::Open(dir.path + "/ledger.sqlite");
    REQUIRE(opened.ok());
    ledger = std::move(opened).value();
  }
  ~Fixture() {
    if (restorer) restorer->Shutdown();
    fake->WaitIdle();
  }

  RestorerOptions Options() const {
    RestorerOptions o;
    o.endpoint = kEndpoint;
    o.bucket = kBucket;
    o.poll_min = 1s;
    o.poll_max = 8s;
    o.max_attempts = 3;
    return o;
  }
  void Start(std::shared_ptr<s3::ObjectStore> store = nullptr,
             std::optional<RestorerOptions> options = std::nullopt) {
    restorer = Restorer::Create(store ? store : fake, ledger, timer, options.value_or(Options()));
  }
  // Lets every store call made so far (and those they cause) answer.
  void Settle() { fake->WaitIdle(); }
  // Moves fake time to the next timer (a poll) and lets its HEAD answer.
  void NextPoll() {
    std::optional<Clock::Duration> next = timer.NextIn();
    REQUIRE(next.has_value());
    timer.Advance(*next);
    Settle();
  }
  uint64_t Restores() const { return fake->CallCount(Operation::kRestoreObject); }
  uint64_t Heads() const { return fake->CallCount(Operation::kHeadObject); }
  Clock::TimePoint In(Clock::Duration d) { return clock.Now() + d; }
  void Wait(const std::string& key, InfoAnswers& answers, Clock::Duration timeout = 1h,
            std::shared_ptr<CancellationToken> cancel = nullptr) {
    restorer->WaitOnline(key, In(timeout), std::move(cancel), answers.Callback());
  }
  std::optional<LedgerEntry> Entry(const std::string& key) {
    auto found = ledger->Find({kEndpoint, kBucket, key});
    REQUIRE(found.ok());
    return *found;
  }
  // GET of the whole object, compared byte for byte.
  Status ReadBack(const std::string& key) {
    std::string buffer(kData.size() + 16, '\0');
    auto got = s3::Await<s3::GetObjectResult>([&](auto cb) {
      fake->GetObject(
          {.bucket = kBucket, .key = key, .buffer = std::as_writable_bytes(std::span(buffer))}, cb);
    });
    if (!got.ok()) return got.status();
    buffer.resize(got->bytes);
    if (buffer != kData) return Status::DataLoss("read back differs");
    return Status::Ok();
  }

  testing::FakeClock clock;
  testing::FakeTimer timer{clock};
  std::shared_ptr<s3::FakeObjectStore> fake = std::make_shared<s3::FakeObjectStore>();
  TempDir dir;
  std::shared_ptr<Ledger> ledger;
  std::shared_ptr<Restorer> restorer;
};

}  // namespace

TEST_SUITE("hsm") {
  TEST_CASE("50 concurrent waits on one offline object send one RestoreObject") {
    Fixture f;
    const std::string etag = f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.Start();
    InfoAnswers answers;
    std::vector<std::thread> readers;
    for (int i = 0; i < 50; ++i) readers.emplace_back([&] { f.Wait("cold", answers); });
    for (auto& t : readers) t.join();
    f.Settle();
    CHECK(f.Restores() == 1);
    CHECK(f.Heads() == 1);  // the late arrivals joined the first HEAD's loop
    CHECK(answers.size() == 0);
    CHECK(f.restorer->counters().waiters == 50);
    CHECK(f.restorer->IsRequested("cold"));
    REQUIRE(f.Entry("cold").has_value());
    CHECK(f.Entry("cold")->phase == LedgerPhase::kRequested);
    CHECK(f.Entry("cold")->etag == etag);
    CHECK(f.ReadBack("cold").code() == StatusCode::kFailedPrecondition);

    f.NextPoll();  // still ongoing
    CHECK(answers.size() == 0);
    REQUIRE(f.restorer->LastSeen("cold").has_value());
    CHECK(f.restorer->LastSeen("cold")->restore->ongoing);
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 50);
    for (const auto& r : got) {
      REQUIRE(r.ok());
      CHECK(r->key == "cold");
      CHECK(r->etag == etag);
      CHECK(r->size == kData.size());
    }
    CHECK(f.Restores() == 1);
    RestorerCounters c = f.restorer->counters();
    CHECK(c.restore_requests == 1);
    CHECK(c.head_requests == f.Heads());
    CHECK(c.waiters == 0);
    CHECK(c.completed == 1);
    CHECK(c.re_requests == 0);
    CHECK(c.failures == 0);
    CHECK(f.Entry("cold")->phase == LedgerPhase::kOnline);
    CHECK_FALSE(f.restorer->IsRequested("cold"));
    CHECK(f.timer.pending() == 0);  // no poll, no deadline left behind
    CHECK(f.ReadBack("cold").ok());
  }

  TEST_CASE("a readable object is answered after one HEAD, without a request") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "warm", kData);
    f.fake->PutObjectForTest(kBucket, "thawed", kData, "GLACIER");
    REQUIRE(f.fake->CompleteRestore(kBucket, "thawed").ok());
    f.Start();
    InfoAnswers answers;
    f.Wait("warm", answers);
    f.Wait("thawed", answers);
    f.Settle();
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 2);
    CHECK(got[0].ok());
    CHECK(got[1].ok());
    CHECK(f.Restores() == 0);
    CHECK(f.Heads() == 2);
    CHECK_FALSE(f.Entry("warm").has_value());
    CHECK(f.timer.pending() == 0);
  }

  TEST_CASE("a wait past its deadline ends with kDeadlineExceeded at the deadline") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.Start();
    InfoAnswers answers;
    const Clock::TimePoint deadline = f.In(5s);
    Clock::TimePoint answered_at{};
    f.restorer->WaitOnline("cold", deadline, nullptr, [&](Result<s3::ObjectInfo> r) {
      answered_at = f.clock.Now();
      answers.Callback()(std::move(r));
    });
    f.Settle();
    for (int i = 0; i < 10 && answers.size() == 0; ++i) f.NextPoll();
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 1);
    CHECK(got[0].status().code() == StatusCode::kDeadlineExceeded);
    CHECK(answered_at == deadline);
    CHECK(f.timer.pending() == 0);
    CHECK(f.restorer->IsRequested("cold"));  // the request stays live for the next reader
    // A deadline already past is answered at once.
    f.restorer->WaitOnline("cold", f.clock.Now(), nullptr, answers.Callback());
    CHECK(answers.Get().back().status().code() == StatusCode::kDeadlineExceeded);
  }

  TEST_CASE("cancellation answers kCancelled at once, before any further poll") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.Start();
    InfoAnswers answers;
    auto token = CancellationToken::Create();
    f.Wait("cold", answers, 1h, token);
    f.Settle();
    REQUIRE(f.timer.pending() == 2);  // the deadline and the next poll
    const uint64_t heads = f.Heads();
    token->Cancel();  // on this thread: the answer is there when Cancel returns
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 1);
    CHECK(got[0].status().code() == StatusCode::kCancelled);
    CHECK(f.Heads() == heads);
    CHECK(f.timer.pending() == 0);
    CHECK(f.restorer->counters().waiters == 0);

    // Already cancelled: answered inside WaitOnline, nothing sent.
    f.Wait("cold", answers, 1h, token);
    CHECK(answers.size() == 2);
    CHECK(answers.Get()[1].status().code() == StatusCode::kCancelled);
    CHECK(f.Heads() == heads);

    // A waiter answered otherwise drops its cancel callback: a later Cancel answers nothing.
    auto later = CancellationToken::Create();
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.Wait("cold", answers, 1h, later);
    f.Settle();
    REQUIRE(answers.size() == 3);
    CHECK(answers.Get()[2].ok());
    later->Cancel();
    CHECK(answers.size() == 3);
  }

  TEST_CASE("releaser race: released before anyone read it, the key is requested again") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.Start();
    InfoAnswers answers;
    f.Wait("cold", answers);
    f.Settle();
    REQUIRE(f.Restores() == 1);
    // The restore completes and the releaser frees the copy before the next poll sees it.
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    REQUIRE(f.fake->ExpireRestore(kBucket, "cold").ok());
    f.NextPoll();
    CHECK(f.Restores() == 2);
    CHECK(answers.size() == 0);
    CHECK(f.restorer->counters().re_requests == 1);
    CHECK(f.Entry("cold")->attempts == 2);
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    REQUIRE(answers.size() == 1);
    CHECK(answers.Get()[0].ok());
    CHECK(f.ReadBack("cold").ok());
  }

  TEST_CASE("releaser race after a read: GET fails, NoteOffline, the next wait requests again") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.Start();
    InfoAnswers answers;
    f.Wait("cold", answers);
    f.Settle();
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    REQUIRE(answers.size() == 1);
    REQUIRE(answers.Get()[0].ok());
    // Released between the HEAD and the GET: the reader's GET says InvalidObjectState.
    REQUIRE(f.fake->ExpireRestore(kBucket, "cold").ok());
    Status read = f.ReadBack("cold");
    REQUIRE(read.code() == StatusCode::kFailedPrecondition);
    CHECK(read.detail().s3_code == "InvalidObjectState");
    f.restorer->NoteOffline("cold");
    CHECK_FALSE(f.restorer->LastSeen("cold").has_value());
    CHECK(f.Entry("cold")->phase == LedgerPhase::kOnline);  // what the ledger last knew
    f.Wait("cold", answers);
    f.Settle();
    CHECK(f.Restores() == 2);
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    REQUIRE(answers.size() == 2);
    CHECK(answers.Get()[1].ok());
    CHECK(f.ReadBack("cold").ok());
  }

  TEST_CASE("max_attempts spent: kFailedPrecondition and a failed ledger entry") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    RestorerOptions options = f.Options();
    options.max_attempts = 2;
    f.Start(nullptr, options);
    InfoAnswers answers;
    f.Wait("cold", answers);
    f.Settle();
    for (int i = 0; i < 10 && answers.size() == 0; ++i) {
      // Every restore is lost before it completes.
      REQUIRE(f.fake->ExpireRestore(kBucket, "cold").ok());
      f.NextPoll();
    }
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 1);
    CHECK(got[0].status().code() == StatusCode::kFailedPrecondition);
    CHECK(got[0].status().message().find("after 2 attempts") != std::string_view::npos);
    CHECK(f.Restores() == 2);
    RestorerCounters c = f.restorer->counters();
    CHECK(c.failures == 1);
    CHECK(c.re_requests == 1);
    REQUIRE(f.Entry("cold").has_value());
    CHECK(f.Entry("cold")->phase == LedgerPhase::kFailed);
    CHECK(f.Entry("cold")->attempts == 2);
    CHECK_FALSE(f.Entry("cold")->last_error.empty());
    CHECK_FALSE(f.restorer->IsRequested("cold"));
  }

  TEST_CASE("a request recorded by another process is trusted: no RestoreObject") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.fake->PutObjectForTest(kBucket, "stale", kData, "GLACIER");
    // `reelfs stage` in another process: its own connection to the same file.
    auto other = Ledger::Open(f.ledger->path());
    REQUIRE(other.ok());
    LedgerEntry entry;
    entry.id = {kEndpoint, kBucket, "cold"};
    entry.requested_at = entry.updated_at = f.clock.WallNow();
    entry.batch = "stage-1";
    REQUIRE((*other)->Upsert(entry).ok());
    entry.id.key = "stale";
    entry.requested_at = entry.updated_at = f.clock.WallNow() - 2h;  // older than trust_requested
    REQUIRE((*other)->Upsert(entry).ok());
    f.Start();
    CHECK(f.restorer->IsRequested("cold"));
    CHECK_FALSE(f.restorer->IsRequested("stale"));

    Answers<Status> requested;
    f.restorer->Request("cold", "", 0, requested.Callback());
    REQUIRE(requested.size() == 1);  // trusted: answered at once
    CHECK(requested.Get()[0].ok());

    InfoAnswers answers;
    f.Wait("cold", answers);
    f.Settle();
    CHECK(f.Restores() == 0);  // the HEAD does not say "ongoing", the ledger does
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    REQUIRE(answers.size() == 1);
    CHECK(answers.Get()[0].ok());
    CHECK(f.Restores() == 0);
    auto seen_by_other = (*other)->Find({kEndpoint, kBucket, "cold"});
    REQUIRE(seen_by_other.ok());
    CHECK((*seen_by_other)->phase == LedgerPhase::kOnline);

    f.Wait("stale", answers);
    f.Settle();
    CHECK(f.Restores() == 1);  // a stale entry is not trusted
    f.restorer->Shutdown();    // answers the "stale" waiter while `answers` still exists
    CHECK(answers.size() == 2);
  }

  TEST_CASE("Request: sent once, joined while in flight, trusted while live") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    auto holding = std::make_shared<HoldingStore>(f.fake);
    f.Start(holding);
    Answers<Status> done;
    f.restorer->Request("cold", "e1", 42, done.Callback());
    f.restorer->Request("cold", "e1", 42, done.Callback());
    holding->ReleaseAll();
    REQUIRE(done.size() == 2);
    CHECK(done.Get()[0].ok());
    CHECK(done.Get()[1].ok());
    f.restorer->Request("cold", "e1", 42, done.Callback());
    CHECK(done.size() == 3);
    CHECK(f.Restores() == 1);
    REQUIRE(f.Entry("cold").has_value());
    CHECK(f.Entry("cold")->size == 42);
    CHECK(f.Entry("cold")->days == std::optional<int>(7));
  }

  TEST_CASE("a 200 (versitygw's accepted) is followed by a HEAD at once") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    auto holding = std::make_shared<HoldingStore>(f.fake);
    holding->hold = false;
    holding->accepted_as_ok = true;
    f.Start(holding);
    InfoAnswers answers;
    f.Wait("cold", answers);
    f.Settle();
    CHECK(f.Restores() == 1);
    CHECK(f.Heads() == 2);  // the first look, then the one after the 200
    CHECK(answers.size() == 0);
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    f.NextPoll();
    REQUIRE(answers.size() == 1);
    CHECK(answers.Get()[0].ok());
  }

  TEST_CASE("max_in_flight bounds the store calls; the rest queue and all complete") {
    Fixture f;
    for (int i = 0; i < 6; ++i) {
      f.fake->PutObjectForTest(kBucket, "k" + std::to_string(i), kData, "GLACIER");
    }
    auto holding = std::make_shared<HoldingStore>(f.fake);
    RestorerOptions options = f.Options();
    options.max_in_flight = 2;
    f.Start(holding, options);
    InfoAnswers answers;
    for (int i = 0; i < 6; ++i) f.Wait("k" + std::to_string(i), answers);
    for (int round = 0; round < 20 && f.Restores() < 6; ++round) {
      f.Settle();
      CHECK(holding->held() <= 2);
      holding->ReleaseAll();
    }
    CHECK(f.Restores() == 6);
    for (int i = 0; i < 6; ++i) {
      REQUIRE(f.fake->CompleteRestore(kBucket, "k" + std::to_string(i)).ok());
    }
    for (int round = 0; round < 20 && answers.size() < 6; ++round) {
      holding->ReleaseAll();
      // Polls only (at most poll_max away), never as far as the deadlines.
      if (auto next = f.timer.NextIn(); next.has_value() && *next <= 8s) f.timer.Advance(*next);
      f.Settle();
      CHECK(holding->held() <= 2);
    }
    holding->ReleaseAll();
    REQUIRE(answers.size() == 6);
    for (const auto& r : answers.Get()) CHECK_MESSAGE(r.ok(), r.status().ToString());
    CHECK(holding->max_held() == 2);
  }

  TEST_CASE("store errors: missing key, refused restore, transient HEAD failure") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    f.fake->PutObjectForTest(kBucket, "denied", kData, "GLACIER");
    auto faulty = std::make_shared<s3::FaultInjectingStore>(f.fake);
    f.Start(faulty);
    InfoAnswers missing;
    f.Wait("nope", missing);
    CHECK(missing.Wait(1)[0].status().code() == StatusCode::kNotFound);

    faulty->FailNext(Operation::kRestoreObject, 1, Status::PermissionDenied("injected 403"));
    InfoAnswers denied;
    f.Wait("denied", denied);
    CHECK(denied.Wait(1)[0].status().code() == StatusCode::kPermissionDenied);
    REQUIRE(f.Entry("denied").has_value());
    CHECK(f.Entry("denied")->phase == LedgerPhase::kFailed);
    CHECK(f.restorer->counters().failures == 1);

    faulty->FailNext(Operation::kRestoreObject, 1, Status::Unavailable("injected 503"));
    InfoAnswers busy;
    f.Wait("cold", busy);
    CHECK(busy.Wait(1)[0].status().code() == StatusCode::kUnavailable);
    CHECK_FALSE(f.Entry("cold").has_value());  // not refused for good: no failed entry

    // A transient HEAD failure during polling keeps the loop going.
    InfoAnswers waiting;
    f.Wait("cold", waiting);
    while (f.restorer->counters().restore_requests < 3) std::this_thread::yield();
    f.Settle();
    faulty->FailNext(Operation::kHeadObject, 1, Status::Unavailable("injected 503"));
    REQUIRE(f.fake->CompleteRestore(kBucket, "cold").ok());
    const uint64_t heads = f.restorer->counters().head_requests;
    f.timer.Advance(*f.timer.NextIn());                       // this poll fails
    while (f.timer.pending() < 2) std::this_thread::yield();  // the deadline and the next poll
    CHECK(f.restorer->counters().head_requests == heads + 1);
    CHECK(waiting.size() == 0);
    f.timer.Advance(*f.timer.NextIn());  // this one succeeds
    CHECK(waiting.Wait(1)[0].ok());
  }

  TEST_CASE("with the real timer thread and the real clock, waits end once restored") {
    // The production wiring: polls and deadlines on CreateRealTimer's thread. No timing is
    // asserted; the wait ends when a poll sees the restore done.
    auto fake = std::make_shared<s3::FakeObjectStore>();
    fake->PutObjectForTest(kBucket, "cold", kData, "GLACIER");
    auto timer = CreateRealTimer(RealClock(), "restorer-test");
    RestorerOptions options;
    options.endpoint = kEndpoint;
    options.bucket = kBucket;
    options.poll_min = 1ms;
    options.poll_max = 4ms;
    auto restorer = Restorer::Create(fake, Ledger::InMemory(), *timer, options);
    InfoAnswers answers;
    for (int i = 0; i < 8; ++i) {
      restorer->WaitOnline("cold", RealClock().Now() + 1h, nullptr, answers.Callback());
    }
    while (restorer->counters().restore_requests == 0) std::this_thread::yield();
    REQUIRE(fake->CompleteRestore(kBucket, "cold").ok());
    std::vector<Result<s3::ObjectInfo>> got = answers.Wait(8);
    for (const auto& r : got) CHECK(r.ok());
    CHECK(fake->CallCount(Operation::kRestoreObject) == 1);
    // No deadline: TimePoint::max() schedules no timer and still gets its answer.
    restorer->WaitOnline("cold", Clock::TimePoint::max(), nullptr, answers.Callback());
    CHECK(answers.Wait(9).back().ok());
    restorer->Shutdown();
    fake->WaitIdle();
  }

  TEST_CASE("Shutdown answers every waiter and caller, and later calls, with kCancelled") {
    Fixture f;
    f.fake->PutObjectForTest(kBucket, "a", kData, "GLACIER");
    f.fake->PutObjectForTest(kBucket, "b", kData, "GLACIER");
    auto holding = std::make_shared<HoldingStore>(f.fake);
    f.Start(holding);
    InfoAnswers answers;
    f.Wait("a", answers);
    f.Wait("a", answers);
    f.Wait("b", answers);
    holding->ReleaseAll();  // the HEADs answer: restores of a and b go out, and are held
    Answers<Status> requested;
    f.fake->PutObjectForTest(kBucket, "c", kData, "GLACIER");
    f.restorer->Request("c", "", 0, requested.Callback());  // its RestoreObject is held too
    f.Settle();
    REQUIRE(holding->held() == 3);
    f.restorer->Shutdown();
    f.restorer->Shutdown();  // idempotent
    std::vector<Result<s3::ObjectInfo>> got = answers.Get();
    REQUIRE(got.size() == 3);
    for (const auto& r : got) CHECK(r.status().code() == StatusCode::kCancelled);
    REQUIRE(requested.size() == 1);
    CHECK(requested.Get()[0].code() == StatusCode::kCancelled);
    CHECK(f.timer.pending() == 0);
    holding->ReleaseAll();  // late answers of calls already sent are ignored
    CHECK(answers.size() == 3);
    CHECK(requested.size() == 1);

    f.Wait("a", answers);
    CHECK(answers.Get().back().status().code() == StatusCode::kCancelled);
    f.restorer->Request("a", "", 0, requested.Callback());
    CHECK(requested.Get().back().code() == StatusCode::kCancelled);
    CHECK(f.restorer->counters().waiters == 0);
  }
}

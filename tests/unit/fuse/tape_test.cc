// The tape-aware FileSystem against the fake store's archive: st_blocks and attribute timeouts of
// offline objects, every --offline mode's errno (through the real errno table), O_NONBLOCK,
// waits answered by a restore, interrupts, deadlines, the releaser race, concurrent readers, and
// every xattr (user.s3.*, user.hsm.*, summary, user.reelfs.mount, user.hsm.request).
//
// The Restorer is a scripted fake (ScriptedRestorer): the test decides when a wait ends and how,
// so nothing here depends on timing. Its single-flight logic is hsm/restorer.cc's own business;
// the FileSystem's part is to send every offline read to it and never a RestoreObject itself.
#include <fcntl.h>

#include <cerrno>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "fuse/core/filesystem.h"
#include "fuse/lowlevel/errno_map.h"
#include "hsm/ledger.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_timer.h"

namespace reelfs::fuse {
namespace {

using s3::Await;
using s3::AwaitStatus;
using s3::FakeObjectStore;
using s3::Operation;

constexpr char kBucket[] = "bkt";

// A Restorer whose waits end when the test says so.
class ScriptedRestorer final : public hsm::Restorer {
 public:
  struct Waiter {
    std::string key;
    Clock::TimePoint deadline;
    s3::Callback<s3::ObjectInfo> done;
    std::shared_ptr<bool> answered;
  };

  void Request(const std::string& key, const std::string&, uint64_t,
               s3::StatusCallback done) override {
    Status result;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(key);
      requested_.insert(key);
      result = request_result_;
    }
    done(result);
  }

  void WaitOnline(const std::string& key, Clock::TimePoint deadline,
                  std::shared_ptr<CancellationToken> cancel,
                  s3::Callback<s3::ObjectInfo> done) override {
    auto answered = std::make_shared<bool>(false);
    auto shared_done = std::make_shared<s3::Callback<s3::ObjectInfo>>(std::move(done));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++wait_calls_;
      waiters_.push_back(Waiter{
          key, deadline, [shared_done](Result<s3::ObjectInfo> r) { (*shared_done)(r); }, answered});
    }
    changed_.notify_all();
    if (cancel != nullptr) {
      cancel->OnCancel([this, answered, shared_done] {
        if (Claim(answered)) (*shared_done)(Status::Cancelled("interrupted"));
      });
    }
  }

  void NoteOffline(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    noted_offline_.push_back(key);
  }
  std::optional<s3::ObjectInfo> LastSeen(const std::string&) const override { return std::nullopt; }
  bool IsRequested(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return requested_.count(key) > 0;
  }
  hsm::RestorerCounters counters() const override { return {}; }
  void Shutdown() override {
    Answer([](const Waiter&) { return Status::Cancelled("shutdown"); });
  }

  // Answers every unanswered waiter with `result(waiter)`; returns how many.
  size_t Answer(const std::function<Result<s3::ObjectInfo>(const Waiter&)>& result) {
    std::vector<Waiter> ws;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ws.swap(waiters_);
    }
    size_t n = 0;
    for (Waiter& w : ws) {
      if (!Claim(w.answered)) continue;
      w.done(result(w));
      ++n;
    }
    return n;
  }
  // Blocks until `n` WaitOnline calls have been made in total.
  void AwaitWaitCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return wait_calls_ >= n; });
  }
  size_t wait_calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return wait_calls_;
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  std::vector<std::string> noted_offline() {
    std::lock_guard<std::mutex> lock(mutex_);
    return noted_offline_;
  }
  std::vector<Waiter> waiters() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiters_;
  }
  void set_request_result(Status s) {
    std::lock_guard<std::mutex> lock(mutex_);
    request_result_ = std::move(s);
  }

 private:
  bool Claim(const std::shared_ptr<bool>& answered) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (*answered) return false;
    *answered = true;
    return true;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> requests_;
  std::set<std::string> requested_;
  std::vector<std::string> noted_offline_;
  std::vector<Waiter> waiters_;
  size_t wait_calls_ = 0;
  Status request_result_;
};

struct Fixture {
  explicit Fixture(OfflineMode mode = OfflineMode::kWait, bool with_restorer = true)
      : fake(std::make_shared<FakeObjectStore>()),
        restorer(with_restorer ? std::make_shared<ScriptedRestorer>() : nullptr) {
    fake->CreateBucketForTest(kBucket);
    options.bucket = kBucket;
    options.metadata_ttl = std::chrono::seconds(100);
    options.negative_ttl = std::chrono::seconds(10);
    options.tape.offline = mode;
    options.tape.offline_wait = std::chrono::seconds(600);
    options.tape.state_ttl = std::chrono::seconds(5);
    options.tape.summary_ttl = std::chrono::seconds(10);
    options.endpoint = "http://127.0.0.1:7070";
    options.ledger_path = "/tmp/ledger \"x\".sqlite";
    fs = CreateFileSystem(fake, options, CreateHeapBufferPool(),
                          std::make_shared<MemoryBudget>(64ull << 20), clock, restorer);
  }
  ~Fixture() {
    if (restorer != nullptr) restorer->Shutdown();
  }
  std::string Put(const std::string& key, std::string data,
                  const std::string& storage_class = "STANDARD") {
    return fake->PutObjectForTest(kBucket, key, std::move(data), storage_class);
  }
  Entry Lookup(InodeId parent, std::string_view name) {
    auto e = Await<Entry>([&](auto cb) { fs->Lookup(parent, name, cb); });
    REQUIRE(e.ok());
    return *e;
  }
  Entry LookupPath(const std::string& path) {
    InodeId at = kRootInode;
    Entry e;
    size_t start = 0;
    while (start < path.size()) {
      size_t slash = path.find('/', start);
      if (slash == std::string::npos) slash = path.size();
      e = Lookup(at, std::string_view(path).substr(start, slash - start));
      at = e.attr.ino;
      start = slash + 1;
    }
    return e;
  }
  uint64_t Open(InodeId ino, int flags = O_RDONLY) {
    auto h = Await<OpenedFile>([&](auto cb) { fs->Open(ino, flags, 0, cb); });
    REQUIRE(h.ok());
    return h->fh;
  }
  Result<ReadData> Read(InodeId ino, uint64_t fh, uint64_t off, size_t size,
                        std::shared_ptr<CancellationToken> interrupt = nullptr) {
    return Await<ReadData>([&](auto cb) { fs->Read(ino, fh, off, size, interrupt, cb); });
  }
  // Starts a read and returns its future (for reads that wait).
  std::future<Result<ReadData>> StartRead(InodeId ino, uint64_t fh, uint64_t off, size_t size,
                                          std::shared_ptr<CancellationToken> interrupt = nullptr) {
    auto promise = std::make_shared<std::promise<Result<ReadData>>>();
    auto future = promise->get_future();
    fs->Read(ino, fh, off, size, std::move(interrupt),
             [promise](Result<ReadData> r) { promise->set_value(std::move(r)); });
    return future;
  }
  Result<std::string> Xattr(InodeId ino, std::string_view name) {
    return Await<std::string>([&](auto cb) { fs->GetXattr(ino, name, cb); });
  }
  std::vector<std::string> XattrNames(InodeId ino) {
    auto r = Await<std::vector<std::string>>([&](auto cb) { fs->ListXattr(ino, cb); });
    REQUIRE(r.ok());
    return *r;
  }
  Status SetXattr(InodeId ino, std::string_view name, std::string_view value) {
    return AwaitStatus([&](auto cb) { fs->SetXattr(ino, name, value, cb); });
  }
  // The restored object as a HEAD now describes it (what the Restorer hands a waiter).
  s3::ObjectInfo Head(const std::string& key) {
    auto info = s3::Await<s3::ObjectInfo>([&](auto cb) { fake->HeadObject({kBucket, key}, cb); });
    REQUIRE(info.ok());
    return *info;
  }
  uint64_t Calls(Operation op) const { return fake->CallCount(op); }

  MountOptions options;
  testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<ScriptedRestorer> restorer;
  std::unique_ptr<FileSystem> fs;
};

std::string Text(const ReadData& d) {
  std::string out;
  for (auto p : d.pieces) out.append(reinterpret_cast<const char*>(p.data()), p.size());
  return out;
}

int ErrnoOf(const Status& s) { return StatusToErrno(s); }

std::string Content(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 % 251);
  return s;
}

TEST_SUITE("fuse") {
  TEST_CASE("tape: st_blocks and attribute timeouts follow readability") {
    Fixture f;
    f.Put("online.bin", Content(2000, 'a'));
    f.Put("offline.bin", Content(2000, 'b'), "GLACIER");
    f.Put("empty.bin", "", "DEEP_ARCHIVE");
    f.Put("restored.bin", Content(1025, 'c'), "GLACIER");
    REQUIRE(f.fake->CompleteRestore(kBucket, "restored.bin").ok());

    Entry on = f.Lookup(kRootInode, "online.bin");
    CHECK(on.attr.size == 2000);
    CHECK(on.attr.blocks == 4);
    CHECK(on.attr_timeout == std::chrono::duration<double>(100));
    Entry off = f.Lookup(kRootInode, "offline.bin");
    CHECK(off.attr.size == 2000);              // st_size is always the object's size
    CHECK(off.attr.mode == (S_IFREG | 0444));  // and the mode stays usable
    CHECK(off.attr.blocks == 1);
    CHECK(off.attr_timeout == std::chrono::duration<double>(5));
    CHECK(off.entry_timeout == std::chrono::duration<double>(100));
    CHECK(f.Lookup(kRootInode, "empty.bin").attr.blocks == 0);
    Entry restored = f.Lookup(kRootInode, "restored.bin");
    CHECK(restored.attr.blocks == 3);

    // GetAttr after state_ttl asks again (one HEAD) and sees the restore.
    REQUIRE(f.fake->CompleteRestore(kBucket, "offline.bin").ok());
    f.clock.Advance(std::chrono::seconds(6));
    const uint64_t heads = f.Calls(Operation::kHeadObject);
    auto a = Await<Attributes>([&](auto cb) { f.fs->GetAttr(off.attr.ino, cb); });
    REQUIRE(a.ok());
    CHECK(f.Calls(Operation::kHeadObject) == heads + 1);
    CHECK(a->blocks == 4);
    CHECK(a->cache_ttl == std::chrono::duration<double>(100));
  }

  TEST_CASE("tape: --offline=eacces answers EACCES and requests nothing") {
    Fixture f(OfflineMode::kEacces);
    f.Put("d/a", "archived", "GLACIER");
    Entry e = f.LookupPath("d/a");
    uint64_t fh = f.Open(e.attr.ino);  // open() always succeeds
    auto r = f.Read(e.attr.ino, fh, 0, 100);
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == EACCES);
    // A second read within state_ttl trusts the state: no GET.
    const uint64_t gets = f.Calls(Operation::kGetObject);
    r = f.Read(e.attr.ino, fh, 0, 100);
    CHECK(ErrnoOf(r.status()) == EACCES);
    CHECK(f.Calls(Operation::kGetObject) == gets);
    CHECK(f.restorer->requests().empty());
    CHECK(f.restorer->wait_calls() == 0);
    CHECK(f.Calls(Operation::kRestoreObject) == 0);
    f.fs->Release(fh);
  }

  TEST_CASE("tape: --offline=eagain requests a restore and answers EAGAIN") {
    Fixture f(OfflineMode::kEagain);
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    uint64_t fh = f.Open(e.attr.ino);
    auto r = f.Read(e.attr.ino, fh, 0, 100);
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == EAGAIN);
    CHECK(f.restorer->requests() == std::vector<std::string>{"a"});
    CHECK(f.restorer->wait_calls() == 0);
    // Once staging (the Restorer knows the request), the state says so.
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "staging");
    // Restored: the next read after state_ttl GETs again and gets the bytes.
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    f.clock.Advance(std::chrono::seconds(6));
    r = f.Read(e.attr.ino, fh, 0, 100);
    REQUIRE(r.ok());
    CHECK(Text(*r) == "archived");
    f.fs->Release(fh);
  }

  TEST_CASE("tape: user.hsm.request=refresh forgets the cached offline state, file or tree") {
    Fixture f(OfflineMode::kEagain);
    f.Put("d/a", "archived a", "GLACIER");
    f.Put("d/b", "archived b", "GLACIER");
    f.Put("other", "archived o", "GLACIER");
    Entry a = f.LookupPath("d/a");
    Entry b = f.LookupPath("d/b");
    Entry o = f.Lookup(kRootInode, "other");
    uint64_t fa = f.Open(a.attr.ino), fb = f.Open(b.attr.ino), fo = f.Open(o.attr.ino);
    for (auto [ino, fh] : {std::pair{a.attr.ino, fa}, {b.attr.ino, fb}, {o.attr.ino, fo}}) {
      CHECK(ErrnoOf(f.Read(ino, fh, 0, 100).status()) == EAGAIN);
    }
    for (const char* key : {"d/a", "d/b", "other"})
      REQUIRE(f.fake->CompleteRestore(kBucket, key).ok());
    // Restored, but within state_ttl the mount trusts what it saw: no GET, EAGAIN.
    const uint64_t gets = f.Calls(Operation::kGetObject);
    CHECK(ErrnoOf(f.Read(a.attr.ino, fa, 0, 100).status()) == EAGAIN);
    CHECK(f.Calls(Operation::kGetObject) == gets);
    // A refresh of the directory (what `reelfs stage --wait d` sends) forgets d/*, not `other`.
    Entry d = f.Lookup(kRootInode, "d");
    REQUIRE(f.SetXattr(d.attr.ino, "user.hsm.request", "refresh").ok());
    auto r = f.Read(a.attr.ino, fa, 0, 100);
    REQUIRE(r.ok());
    CHECK(Text(*r) == "archived a");
    r = f.Read(b.attr.ino, fb, 0, 100);
    REQUIRE(r.ok());
    CHECK(Text(*r) == "archived b");
    CHECK(ErrnoOf(f.Read(o.attr.ino, fo, 0, 100).status()) == EAGAIN);
    // A file's own refresh; and the state it shows comes from a new HEAD.
    REQUIRE(f.SetXattr(o.attr.ino, "user.hsm.request", "refresh\n").ok());
    r = f.Read(o.attr.ino, fo, 0, 100);
    REQUIRE(r.ok());
    CHECK(Text(*r) == "archived o");
    CHECK(*f.Xattr(o.attr.ino, "user.hsm.state") == "restored");
    CHECK(f.SetXattr(o.attr.ino, "user.hsm.request", "reload").code() ==
          StatusCode::kInvalidArgument);
    for (uint64_t fh : {fa, fb, fo}) f.fs->Release(fh);
  }

  TEST_CASE("tape: O_NONBLOCK answers EAGAIN in every mode, requesting except in eacces") {
    for (OfflineMode mode : {OfflineMode::kWait, OfflineMode::kEagain, OfflineMode::kEacces}) {
      CAPTURE(static_cast<int>(mode));
      Fixture f(mode);
      f.Put("a", "archived", "GLACIER");
      f.Put("b", "online");
      Entry e = f.Lookup(kRootInode, "a");
      uint64_t fh = f.Open(e.attr.ino, O_RDONLY | O_NONBLOCK);
      auto r = f.Read(e.attr.ino, fh, 0, 100);
      REQUIRE_FALSE(r.ok());
      CHECK(ErrnoOf(r.status()) == EAGAIN);
      CHECK(f.restorer->wait_calls() == 0);  // never waits
      CHECK(f.restorer->requests().size() == (mode == OfflineMode::kEacces ? 0u : 1u));
      // An online object reads normally through an O_NONBLOCK handle.
      Entry b = f.Lookup(kRootInode, "b");
      uint64_t fb = f.Open(b.attr.ino, O_RDONLY | O_NONBLOCK);
      auto rb = f.Read(b.attr.ino, fb, 0, 100);
      REQUIRE(rb.ok());
      CHECK(Text(*rb) == "online");
      f.fs->Release(fh);
      f.fs->Release(fb);
    }
  }

  TEST_CASE("tape: --offline=wait replies with the bytes once the restore is done") {
    Fixture f(OfflineMode::kWait);
    const std::string data = Content(300'000, 'w');
    f.Put("big", data, "GLACIER");
    Entry e = f.Lookup(kRootInode, "big");
    uint64_t fh = f.Open(e.attr.ino);
    auto pending = f.StartRead(e.attr.ino, fh, 1000, 200'000);
    f.restorer->AwaitWaitCalls(1);
    auto ws = f.restorer->waiters();
    REQUIRE(ws.size() == 1);
    CHECK(ws[0].key == "big");
    CHECK(ws[0].deadline == f.clock.Now() + std::chrono::seconds(600));
    // No FileSystem thread is held: other calls proceed while the read waits.
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "offline");
    REQUIRE(f.fake->CompleteRestore(kBucket, "big").ok());
    CHECK(f.restorer->Answer([&](const auto& w) { return f.Head(w.key); }) == 1);
    auto r = pending.get();
    REQUIRE(r.ok());
    CHECK(Text(*r) == data.substr(1000, 200'000));
    CHECK(f.Calls(Operation::kRestoreObject) == 0);  // restores are the Restorer's job
    CHECK(f.fs->counters().restore_waits == 1);
    // The inode now knows: readable, full st_blocks.
    auto a = Await<Attributes>([&](auto cb) { f.fs->GetAttr(e.attr.ino, cb); });
    REQUIRE(a.ok());
    CHECK(a->blocks == (300'000 + 511) / 512);
    f.fs->Release(fh);
  }

  TEST_CASE("tape: ReadTo (the side channel's direct read) follows every --offline mode") {
    for (OfflineMode mode : {OfflineMode::kEacces, OfflineMode::kEagain, OfflineMode::kWait}) {
      CAPTURE(static_cast<int>(mode));
      Fixture f(mode);
      const std::string data = Content(300'000, 'r');
      f.Put("big", data, "GLACIER");
      Entry e = f.Lookup(kRootInode, "big");
      uint64_t fh = f.Open(e.attr.ino);
      auto got = std::make_shared<std::string>();
      auto promise = std::make_shared<std::promise<Result<FileSystem::ReadToResult>>>();
      auto future = promise->get_future();
      FileSystem::ReadTarget target;
      target.sink = [got](uint64_t at, std::span<const std::byte> bytes) {
        if (at != got->size()) return Status::Internal("out of order");
        got->append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        return Status::Ok();
      };
      f.fs->ReadTo(
          e.attr.ino, fh, 1000, 200'000, std::move(target), nullptr,
          [promise](Result<FileSystem::ReadToResult> r) { promise->set_value(std::move(r)); });
      if (mode != OfflineMode::kWait) {
        auto r = future.get();
        REQUIRE_FALSE(r.ok());
        CHECK(ErrnoOf(r.status()) == (mode == OfflineMode::kEacces ? EACCES : EAGAIN));
        CHECK(f.restorer->requests().size() == (mode == OfflineMode::kEacces ? 0u : 1u));
        CHECK(got->empty());
      } else {
        f.restorer->AwaitWaitCalls(1);
        REQUIRE(f.fake->CompleteRestore(kBucket, "big").ok());
        CHECK(f.restorer->Answer([&](const auto& w) { return f.Head(w.key); }) == 1);
        auto r = future.get();
        REQUIRE(r.ok());
        CHECK(r->bytes == 200'000);
        CHECK(*got == data.substr(1000, 200'000));
      }
      f.fs->Release(fh);
    }
  }

  TEST_CASE("tape: an interrupted wait answers EINTR at once") {
    Fixture f(OfflineMode::kWait);
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    uint64_t fh = f.Open(e.attr.ino);
    auto token = CancellationToken::Create();
    auto pending = f.StartRead(e.attr.ino, fh, 0, 10, token);
    f.restorer->AwaitWaitCalls(1);
    token->Cancel();  // what the FUSE INTERRUPT handler does
    auto r = pending.get();
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == EINTR);
    f.fs->Release(fh);
  }

  TEST_CASE("tape: a wait past its deadline answers ETIMEDOUT; a permanent failure EIO") {
    Fixture f(OfflineMode::kWait);
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    uint64_t fh = f.Open(e.attr.ino);
    auto pending = f.StartRead(e.attr.ino, fh, 0, 10);
    f.restorer->AwaitWaitCalls(1);
    f.restorer->Answer([](const auto&) { return Status::DeadlineExceeded("deadline"); });
    auto r = pending.get();
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == ETIMEDOUT);

    pending = f.StartRead(e.attr.ino, fh, 0, 10);
    f.restorer->AwaitWaitCalls(2);
    f.restorer->Answer([](const auto&) {
      return Status::FailedPrecondition("restore did not complete after 3 attempts");
    });
    r = pending.get();
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == EIO);
    CHECK(ErrnoOf(r.status()) != ENODATA);
    f.fs->Release(fh);
  }

  TEST_CASE("tape: the releaser race (GET InvalidObjectState after 'restored') recovers") {
    Fixture f(OfflineMode::kWait);
    f.Put("a", "restored bytes", "GLACIER");
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    Entry e = f.Lookup(kRootInode, "a");
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "restored");
    // Released between the listing and the open: the open's whole-object GET (small objects are
    // fetched from Open) fails too, so the read meets the release itself. (Released after the
    // open, the open's GET could win the race and the read would simply succeed.)
    REQUIRE(f.fake->ExpireRestore(kBucket, "a").ok());
    uint64_t fh = f.Open(e.attr.ino);
    auto pending = f.StartRead(e.attr.ino, fh, 0, 100);
    f.restorer->AwaitWaitCalls(1);
    CHECK(f.restorer->noted_offline() == std::vector<std::string>{"a"});
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "offline");
    auto a = Await<Attributes>([&](auto cb) { f.fs->GetAttr(e.attr.ino, cb); });
    REQUIRE(a.ok());
    CHECK(a->blocks == 1);
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    f.restorer->Answer([&](const auto& w) { return f.Head(w.key); });
    auto r = pending.get();
    REQUIRE(r.ok());
    CHECK(Text(*r) == "restored bytes");
    f.fs->Release(fh);
  }

  TEST_CASE("tape: released again right after the wait: the read waits again") {
    Fixture f(OfflineMode::kWait);
    f.Put("a", "second time", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    uint64_t fh = f.Open(e.attr.ino);
    auto pending = f.StartRead(e.attr.ino, fh, 0, 100);
    f.restorer->AwaitWaitCalls(1);
    // The Restorer saw it readable, but it is gone again before the GET.
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    s3::ObjectInfo readable = f.Head("a");
    REQUIRE(f.fake->ExpireRestore(kBucket, "a").ok());
    f.restorer->Answer([&](const auto&) { return readable; });
    f.restorer->AwaitWaitCalls(2);
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    f.restorer->Answer([&](const auto& w) { return f.Head(w.key); });
    auto r = pending.get();
    REQUIRE(r.ok());
    CHECK(Text(*r) == "second time");
    f.fs->Release(fh);
  }

  TEST_CASE("tape: 50 concurrent readers of one offline object all get its bytes") {
    Fixture f(OfflineMode::kWait);
    const std::string data = Content(50'000, 'x');
    f.Put("hot", data, "GLACIER");
    Entry e = f.Lookup(kRootInode, "hot");
    std::vector<uint64_t> handles;
    std::vector<std::future<Result<ReadData>>> reads;
    for (int i = 0; i < 50; ++i) {
      handles.push_back(f.Open(e.attr.ino));
      reads.push_back(f.StartRead(e.attr.ino, handles.back(), i * 1000, 1000));
    }
    f.restorer->AwaitWaitCalls(50);
    // Every reader joined the Restorer (which sends one RestoreObject for all of them); the
    // FileSystem sent none itself, and at most the first reads' GETs reached the store.
    CHECK(f.Calls(Operation::kRestoreObject) == 0);
    REQUIRE(f.fake->CompleteRestore(kBucket, "hot").ok());
    s3::ObjectInfo info = f.Head("hot");
    CHECK(f.restorer->Answer([&](const auto&) { return info; }) == 50);
    for (int i = 0; i < 50; ++i) {
      auto r = reads[i].get();
      REQUIRE(r.ok());
      CHECK(Text(*r) == data.substr(i * 1000, 1000));
    }
    for (uint64_t fh : handles) f.fs->Release(fh);
  }

  TEST_CASE("tape: 50 readers of one offline object with the real Restorer: one RestoreObject") {
    testing::FakeClock clock;
    testing::FakeTimer timer(clock);
    auto fake = std::make_shared<FakeObjectStore>();
    fake->CreateBucketForTest(kBucket);
    const std::string data = Content(64'000, 'r');
    fake->PutObjectForTest(kBucket, "hot", data, "GLACIER");
    hsm::RestorerOptions ro;
    ro.endpoint = "http://127.0.0.1:1";
    ro.bucket = kBucket;
    ro.poll_min = std::chrono::seconds(1);
    ro.poll_max = std::chrono::seconds(4);
    std::shared_ptr<hsm::Restorer> restorer = hsm::Restorer::Create(
        fake, std::shared_ptr<hsm::Ledger>(hsm::Ledger::InMemory()), timer, ro);
    MountOptions options;
    options.bucket = kBucket;
    options.tape.offline = OfflineMode::kWait;
    options.tape.offline_wait = std::chrono::seconds(3600);
    auto fs = CreateFileSystem(fake, options, CreateHeapBufferPool(),
                               std::make_shared<MemoryBudget>(64ull << 20), clock, restorer);
    auto e = Await<Entry>([&](auto cb) { fs->Lookup(kRootInode, "hot", cb); });
    REQUIRE(e.ok());
    std::vector<uint64_t> handles;
    std::vector<std::future<Result<ReadData>>> reads;
    for (int i = 0; i < 50; ++i) {
      auto h = Await<OpenedFile>([&](auto cb) { fs->Open(e->attr.ino, O_RDONLY, 0, cb); });
      REQUIRE(h.ok());
      handles.push_back(h->fh);
      auto promise = std::make_shared<std::promise<Result<ReadData>>>();
      reads.push_back(promise->get_future());
      fs->Read(e->attr.ino, h->fh, i * 1000, 1000, nullptr,
               [promise](Result<ReadData> r) { promise->set_value(std::move(r)); });
    }
    // Drive the Restorer's polls with the fake timer until every reader has its bytes; the
    // library "finishes" once the request arrived.
    bool completed = false;
    auto all_done = [&] {
      for (auto& r : reads) {
        if (r.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
      }
      return true;
    };
    while (!all_done()) {
      fake->WaitIdle();
      if (!completed && fake->CallCount(Operation::kRestoreObject) > 0) {
        REQUIRE(fake->CompleteRestore(kBucket, "hot").ok());
        completed = true;
      }
      timer.Advance(std::chrono::seconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int i = 0; i < 50; ++i) {
      auto r = reads[i].get();
      REQUIRE(r.ok());
      CHECK(Text(*r) == data.substr(i * 1000, 1000));
    }
    CHECK(fake->CallCount(Operation::kRestoreObject) == 1);
    for (uint64_t fh : handles) fs->Release(fh);
    fs.reset();
    restorer->Shutdown();
  }

  TEST_CASE("tape: without a Restorer, wait and eagain fall back to EACCES") {
    Fixture f(OfflineMode::kWait, /*with_restorer=*/false);
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    uint64_t fh = f.Open(e.attr.ino);
    auto r = f.Read(e.attr.ino, fh, 0, 10);
    CHECK(ErrnoOf(r.status()) == EACCES);
    CHECK(ErrnoOf(f.SetXattr(e.attr.ino, "user.hsm.request", "stage")) == EOPNOTSUPP);
    f.fs->Release(fh);
  }

  TEST_CASE("tape: file xattrs for online, offline, restored and hinted objects") {
    Fixture f;
    const std::string etag_on = f.Put("d/on", "online");
    f.Put("d/off", "offline!", "GLACIER");
    f.Put("d/rest", "restored", "DEEP_ARCHIVE");
    const auto expiry = std::chrono::system_clock::time_point(std::chrono::seconds(1893456000));
    REQUIRE(f.fake->CompleteRestore(kBucket, "d/rest", expiry).ok());  // 2030-01-01T00:00:00Z
    f.Put("d/placeholder", "vgw", "GLACIER");
    // versitygw's fixed 2 Dec 2050 "expiry" is no expiry at all.
    const auto y2050 = std::chrono::system_clock::time_point(std::chrono::seconds(2553465600));
    REQUIRE(f.fake->CompleteRestore(kBucket, "d/placeholder", y2050).ok());
    REQUIRE(f.fake
                ->SetHintsForTest(kBucket, "d/off",
                                  {{"x-reelfs-tape-cartridge", "RL0007L9"},
                                   {"x-reelfs-tape-block", "1234"},
                                   {"x-reelfs-tape-position", "wrap=12,lpos=34567"}})
                .ok());

    Entry on = f.LookupPath("d/on");
    CHECK(*f.Xattr(on.attr.ino, "user.s3.storage_class") == "STANDARD");
    CHECK(*f.Xattr(on.attr.ino, "user.s3.etag") == etag_on);
    CHECK(*f.Xattr(on.attr.ino, "user.s3.restore") == "");
    CHECK(*f.Xattr(on.attr.ino, "user.hsm.state") == "online");
    CHECK(*f.Xattr(on.attr.ino, "user.hsm.restore_expiry") == "");
    CHECK(ErrnoOf(f.Xattr(on.attr.ino, "user.hsm.tape").status()) == ENODATA);
    CHECK(ErrnoOf(f.Xattr(on.attr.ino, "user.other").status()) == ENODATA);
    CHECK(ErrnoOf(f.Xattr(on.attr.ino, "user.hsm.summary").status()) == ENODATA);
    CHECK(f.XattrNames(on.attr.ino) ==
          std::vector<std::string>{"user.s3.storage_class", "user.s3.etag", "user.s3.restore",
                                   "user.hsm.state", "user.hsm.restore_expiry"});

    Entry off = f.LookupPath("d/off");
    CHECK(*f.Xattr(off.attr.ino, "user.s3.storage_class") == "GLACIER");
    CHECK(*f.Xattr(off.attr.ino, "user.hsm.state") == "offline");
    CHECK(*f.Xattr(off.attr.ino, "user.hsm.tape") == "RL0007L9");
    CHECK(*f.Xattr(off.attr.ino, "user.hsm.position") == "block=1234,wrap=12,lpos=34567");
    auto names = f.XattrNames(off.attr.ino);
    CHECK(names.size() == 7);
    CHECK(names[5] == "user.hsm.tape");
    CHECK(names[6] == "user.hsm.position");

    Entry rest = f.LookupPath("d/rest");
    CHECK(*f.Xattr(rest.attr.ino, "user.s3.storage_class") == "DEEP_ARCHIVE");
    CHECK(*f.Xattr(rest.attr.ino, "user.hsm.state") == "restored");
    CHECK(*f.Xattr(rest.attr.ino, "user.hsm.restore_expiry") == "2030-01-01T00:00:00Z");
    const std::string header = *f.Xattr(rest.attr.ino, "user.s3.restore");
    CHECK(header.find("ongoing-request=\"false\"") != std::string::npos);
    CHECK(header.find("2030") != std::string::npos);

    Entry ph = f.LookupPath("d/placeholder");
    CHECK(*f.Xattr(ph.attr.ino, "user.hsm.state") == "restored");
    CHECK(*f.Xattr(ph.attr.ino, "user.hsm.restore_expiry") == "");
  }

  TEST_CASE("tape: a stale unreadable state is refreshed by one HEAD before user.hsm.*") {
    Fixture f;
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    const uint64_t heads = f.Calls(Operation::kHeadObject);
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "offline");  // fresh: no HEAD
    CHECK(f.Calls(Operation::kHeadObject) == heads);
    REQUIRE(f.fake->CompleteRestore(kBucket, "a").ok());
    f.clock.Advance(std::chrono::seconds(6));
    CHECK(*f.Xattr(e.attr.ino, "user.s3.storage_class") == "GLACIER");  // user.s3.*: no HEAD
    CHECK(f.Calls(Operation::kHeadObject) == heads);
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "restored");
    CHECK(f.Calls(Operation::kHeadObject) == heads + 1);
    // Readable now: no more refreshes however old the state gets.
    f.clock.Advance(std::chrono::seconds(60));
    CHECK(*f.Xattr(e.attr.ino, "user.hsm.state") == "restored");
    CHECK(f.Calls(Operation::kHeadObject) == heads + 1);
    CHECK(f.fs->counters().xattr_refreshes == 1);
  }

  TEST_CASE("tape: concurrent stale getxattrs share one HEAD") {
    Fixture f;
    f.Put("a", "archived", "GLACIER");
    Entry e = f.Lookup(kRootInode, "a");
    f.clock.Advance(std::chrono::seconds(6));
    std::vector<std::future<Result<std::string>>> answers;
    for (int i = 0; i < 20; ++i) {
      auto promise = std::make_shared<std::promise<Result<std::string>>>();
      answers.push_back(promise->get_future());
      f.fs->GetXattr(e.attr.ino, "user.hsm.state",
                     [promise](Result<std::string> r) { promise->set_value(std::move(r)); });
    }
    for (auto& a : answers) CHECK(*a.get() == "offline");
    // Calls arriving while the HEAD is in flight join it; later ones (after it ended, still
    // stale by then? no: it refreshed the state) find it fresh.
    CHECK(f.fs->counters().xattr_refreshes == 1);
  }

  TEST_CASE("tape: user.hsm.summary counts objects and bytes per state, cached") {
    Fixture f;
    f.Put("data/a", std::string(10, 'a'));
    f.Put("data/sub/b", std::string(20, 'b'), "GLACIER");
    f.Put("data/sub/c", std::string(30, 'c'), "GLACIER");
    f.Put("data/sub/deeper/d", std::string(40, 'd'), "DEEP_ARCHIVE");
    REQUIRE(f.fake->CompleteRestore(kBucket, "data/sub/deeper/d").ok());
    f.Put("data/marker/", "");
    f.Put("other/x", std::string(50, 'x'), "GLACIER");
    Entry data = f.Lookup(kRootInode, "data");
    CHECK(data.attr.is_dir);
    // A restore requested through this mount shows as staging.
    Entry sub = f.LookupPath("data/sub");
    Entry c = f.LookupPath("data/sub/c");
    REQUIRE(f.SetXattr(c.attr.ino, "user.hsm.request", "stage").ok());

    const uint64_t lists = f.Calls(Operation::kListObjects);
    auto s = f.Xattr(data.attr.ino, "user.hsm.summary");
    REQUIRE(s.ok());
    CHECK(*s == R"({"objects":{"online":1,"offline":1,"staging":1,"restored":1,"unknown":0},)"
                R"("bytes":{"online":10,"offline":20,"staging":30,"restored":40,"unknown":0}})");
    CHECK(f.Calls(Operation::kListObjects) == lists + 1);
    // Cached for summary_ttl.
    CHECK(*f.Xattr(data.attr.ino, "user.hsm.summary") == *s);
    CHECK(f.Calls(Operation::kListObjects) == lists + 1);
    f.clock.Advance(std::chrono::seconds(11));
    CHECK(f.Xattr(data.attr.ino, "user.hsm.summary").ok());
    CHECK(f.Calls(Operation::kListObjects) == lists + 2);
    CHECK(f.XattrNames(sub.attr.ino) == std::vector<std::string>{"user.hsm.summary"});

    auto root = f.Xattr(kRootInode, "user.hsm.summary");
    REQUIRE(root.ok());
    CHECK(root->find(R"("offline":2)") != std::string::npos);
  }

  TEST_CASE("tape: user.reelfs.mount on the root only, with the exact keys") {
    Fixture f;
    f.Put("dir/x", "x");
    auto m = f.Xattr(kRootInode, "user.reelfs.mount");
    REQUIRE(m.ok());
    CHECK(*m == R"({"version":1,"endpoint":"http://127.0.0.1:7070","bucket":"bkt","prefix":"",)"
                R"("ledger":"/tmp/ledger \"x\".sqlite"})");
    CHECK(f.XattrNames(kRootInode) ==
          std::vector<std::string>{"user.hsm.summary", "user.reelfs.mount", "user.reelfs.metrics"});
    Entry dir = f.Lookup(kRootInode, "dir");
    CHECK(ErrnoOf(f.Xattr(dir.attr.ino, "user.reelfs.mount").status()) == ENODATA);
  }

  TEST_CASE("tape: user.reelfs.metrics on the root only: FsCounters, no data path by default") {
    Fixture f;
    f.Put("dir/x", "x");
    Entry dir = f.Lookup(kRootInode, "dir");
    auto m = f.Xattr(kRootInode, "user.reelfs.metrics");
    REQUIRE(m.ok());
    CHECK(m->starts_with(R"({"version":1,"fs":{"lookups":1,)"));
    CHECK(m->find(R"("bytes_read":0,)") != std::string::npos);
    CHECK(m->ends_with(R"(},"endpoints":null,"data_path":null,"side_channel":null,"cache":null})"));
    CHECK(ErrnoOf(f.Xattr(dir.attr.ino, "user.reelfs.metrics").status()) == ENODATA);
  }

  TEST_CASE(
      "tape: the side channel's socket and the GPU line in user.reelfs.mount, counters in "
      "metrics") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->CreateBucketForTest(kBucket);
    MountOptions options;
    options.bucket = kBucket;
    options.side_channel_path = "/run/reelfs/0123456789abcdef.sock";
    options.gpu = "no CUDA device";
    testing::FakeClock clock;
    DataPath data_path;
    data_path.side_channel_json = [] { return Json{{"clients_connected", 2}}; };
    auto fs = CreateFileSystem(fake, options, CreateHeapBufferPool(),
                               std::make_shared<MemoryBudget>(1 << 20), clock, nullptr, data_path);
    auto m =
        Await<std::string>([&](auto cb) { fs->GetXattr(kRootInode, "user.reelfs.mount", cb); });
    REQUIRE(m.ok());
    CHECK(m->ends_with(
        R"("side_channel":"/run/reelfs/0123456789abcdef.sock","gpu":"no CUDA device"})"));
    auto metrics =
        Await<std::string>([&](auto cb) { fs->GetXattr(kRootInode, "user.reelfs.metrics", cb); });
    REQUIRE(metrics.ok());
    CHECK(metrics->ends_with(
        R"("data_path":null,"side_channel":{"clients_connected":2},"cache":null})"));
  }

  TEST_CASE("tape: setxattr user.hsm.request=stage on a file; other writes refused") {
    Fixture f;
    f.Put("off", "x", "GLACIER");
    f.Put("on", "y");
    Entry off = f.Lookup(kRootInode, "off");
    Entry on = f.Lookup(kRootInode, "on");
    CHECK(f.SetXattr(off.attr.ino, "user.hsm.request", "stage").ok());
    CHECK(f.restorer->requests() == std::vector<std::string>{"off"});
    CHECK(*f.Xattr(off.attr.ino, "user.hsm.state") == "staging");
    // A trailing NUL (some writers send one) is accepted.
    CHECK(f.SetXattr(off.attr.ino, "user.hsm.request", std::string_view("stage\0", 6)).ok());
    // Online: nothing to request.
    CHECK(f.SetXattr(on.attr.ino, "user.hsm.request", "stage").ok());
    CHECK(f.restorer->requests().size() == 2);
    CHECK(ErrnoOf(f.SetXattr(off.attr.ino, "user.hsm.request", "recall")) == EINVAL);
    // A writable mount stores no other attributes: EOPNOTSUPP (EROFS with --read-only).
    CHECK(ErrnoOf(f.SetXattr(off.attr.ino, "user.hsm.state", "online")) == EOPNOTSUPP);
    CHECK(ErrnoOf(f.SetXattr(off.attr.ino, "user.mine", "1")) == EOPNOTSUPP);
    // A permanent refusal reaches the caller.
    f.restorer->set_request_result(
        Status(StatusCode::kPermissionDenied, "denied", StatusDetail{.http_status = 403}));
    CHECK(ErrnoOf(f.SetXattr(off.attr.ino, "user.hsm.request", "stage")) == EACCES);
  }

  TEST_CASE("tape: setxattr stage on a directory requests its unreadable objects in tape order") {
    Fixture f;
    f.Put("set/k1", "1", "GLACIER");
    f.Put("set/k2", "2", "GLACIER");
    f.Put("set/k3", "3", "GLACIER");
    f.Put("set/k4", "4", "GLACIER");
    f.Put("set/sub/k5", "5", "GLACIER");
    f.Put("set/online", "6");
    f.Put("set/restored", "7", "GLACIER");
    REQUIRE(f.fake->CompleteRestore(kBucket, "set/restored").ok());
    f.Put("elsewhere", "8", "GLACIER");
    f.Put("calm/a", "a");
    auto hint = [&](const std::string& key, const std::string& cart, const std::string& block) {
      REQUIRE(
          f.fake
              ->SetHintsForTest(kBucket, key,
                                {{"x-reelfs-tape-cartridge", cart}, {"x-reelfs-tape-block", block}})
              .ok());
    };
    hint("set/k1", "B", "5");
    hint("set/k2", "A", "900");
    hint("set/k3", "A", "10");
    hint("set/sub/k5", "B", "1");
    // The order of `reelfs stage` (hsm/tape_order.h): cartridge B first (its first key, set/k1,
    // comes before A's set/k2), by block within each; k4 has no hint: after the hinted ones.
    Entry set = f.Lookup(kRootInode, "set");
    REQUIRE(f.SetXattr(set.attr.ino, "user.hsm.request", "stage").ok());
    CHECK(f.restorer->requests() ==
          std::vector<std::string>{"set/sub/k5", "set/k1", "set/k3", "set/k2", "set/k4"});

    // The first permanent error is the answer.
    f.restorer->set_request_result(Status(StatusCode::kPermissionDenied, "denied"));
    CHECK(ErrnoOf(f.SetXattr(set.attr.ino, "user.hsm.request", "stage")) == EACCES);
    // A directory without anything to stage is done at once.
    Entry calm = f.Lookup(kRootInode, "calm");
    f.restorer->set_request_result(Status::Ok());
    CHECK(f.SetXattr(calm.attr.ino, "user.hsm.request", "stage").ok());
    for (const std::string& key : f.restorer->requests()) CHECK_FALSE(key.starts_with("calm/"));
  }
}

}  // namespace
}  // namespace reelfs::fuse

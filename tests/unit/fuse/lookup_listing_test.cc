// Lookups answered from their directory's listing (fuse/core/lookup_listing.h): the request
// counts that are the point of it, waiters answered correctly (negative answers included), the
// fallback to HEAD+LIST when the listing fails or the directory is over the page budget, and the
// pieces on their own (the bounded pager, the flight table).
#include "fuse/core/lookup_listing.h"

#include <atomic>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "fuse/core/filesystem.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"

namespace reelfs::fuse {
namespace {

using s3::Await;
using s3::FakeObjectStore;
using s3::FaultInjectingStore;
using s3::Operation;

constexpr char kBucket[] = "bkt";

// Collects the answers of many asynchronous lookups issued without waiting for each.
struct Answers {
  explicit Answers(size_t n) : results(n) {}
  Callback<Entry> For(size_t i) {
    return [this, i](Result<Entry> r) {
      std::lock_guard<std::mutex> lock(mutex);
      if (results[i].has_value()) {
        ++duplicates;  // a callback must run exactly once
        return;
      }
      results[i].emplace(std::move(r));
      if (++answered == results.size()) all.set_value();
    };
  }
  // The last callback sets `all` under the mutex: take it once, so that callback has left (and
  // unlocked) before the caller may destroy this.
  void WaitAll() {
    all.get_future().wait();
    std::lock_guard<std::mutex> lock(mutex);
  }
  std::mutex mutex;
  std::vector<std::optional<Result<Entry>>> results;
  size_t answered = 0;
  int duplicates = 0;
  std::promise<void> all;
};

// A file system over FaultInjectingStore(FakeObjectStore), counting LIST requests per prefix.
struct Mount {
  explicit Mount(uint32_t pages = 16, std::chrono::seconds metadata_ttl = std::chrono::seconds(100))
      : fake(std::make_shared<FakeObjectStore>()),
        faults(std::make_shared<FaultInjectingStore>(fake)) {
    fake->CreateBucketForTest(kBucket);
    MountOptions options;
    options.bucket = kBucket;
    options.metadata_ttl = metadata_ttl;
    options.negative_ttl = std::chrono::seconds(10);
    options.lookup_listing_pages = pages;
    fs = CreateFileSystem(faults, options, CreateHeapBufferPool(),
                          std::make_shared<MemoryBudget>(64ull << 20), clock);
  }
  ~Mount() {
    fs.reset();
    faults.reset();
  }
  void Put(const std::string& key, std::string data = "x") {
    fake->PutObjectForTest(kBucket, key, std::move(data));
  }
  Result<Entry> Lookup(InodeId parent, std::string_view name) {
    return Await<Entry>([&](auto cb) { fs->Lookup(parent, name, cb); });
  }
  InodeId Dir(std::string_view name) {
    auto e = Lookup(kRootInode, name);
    REQUIRE(e.ok());
    REQUIRE(e->attr.is_dir);
    return e->attr.ino;
  }
  uint64_t Calls(Operation op) const { return fake->CallCount(op); }
  // Page requests of a directory listing (prefix `dir_prefix`), as opposed to the LIST
  // prefix=key/ max-keys=1 of a HEAD+LIST lookup. Counted by a pass-through fault.
  void CountListingsOf(std::string dir_prefix) {
    faults->SetFault(Operation::kListObjects,
                     [this, dir_prefix](const s3::RequestInfo& r) -> std::optional<Status> {
                       if (r.key == dir_prefix) ++listing_pages;
                       return std::nullopt;
                     });
  }

  testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<FaultInjectingStore> faults;
  std::unique_ptr<FileSystem> fs;
  std::atomic<int> listing_pages{0};
};

TEST_SUITE("fuse") {
  TEST_CASE("10 000 lookups in one directory cost one listing, not 10 000 HEAD+LIST") {
    Mount m;
    for (int i = 0; i < 10'000; ++i) m.Put(fmt::format("small/f{:05}", i), std::to_string(i));
    InodeId small = m.Dir("small");
    m.fake->ResetCallCounts();
    const FsCounters before = m.fs->counters();

    // Random order, all issued at once: every lookup but the first queues on the listing.
    std::vector<int> order(10'000);
    for (int i = 0; i < 10'000; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    Answers answers(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      m.fs->Lookup(small, fmt::format("f{:05}", order[i]), answers.For(i));
    }
    answers.WaitAll();
    for (size_t i = 0; i < order.size(); ++i) {
      const Result<Entry>& r = *answers.results[i];
      REQUIRE(r.ok());
      CHECK_FALSE(r->attr.is_dir);
      CHECK(r->attr.size == std::to_string(order[i]).size());
    }
    // 10 pages of the listing; the first lookup, released after page 1, sent HEAD + LIST.
    CHECK(m.Calls(Operation::kListObjects) <= 11);
    CHECK(m.Calls(Operation::kHeadObject) <= 1);
    const FsCounters after = m.fs->counters();
    CHECK(after.lookups - before.lookups == 10'000);
    CHECK(after.list_requests - before.list_requests == m.Calls(Operation::kListObjects));
    CHECK(after.head_requests - before.head_requests == m.Calls(Operation::kHeadObject));
    CHECK(after.inodes == 10'002);  // root, small, every file

    // The listing is installed: readdir and further lookups (present or absent) are free.
    m.fake->ResetCallCounts();
    auto dh = Await<uint64_t>([&](auto cb) { m.fs->OpenDir(small, cb); });
    REQUIRE(dh.ok());
    m.fs->ReleaseDir(*dh);
    auto again = m.Lookup(small, "f01234");
    REQUIRE(again.ok());
    CHECK(m.Lookup(small, "nope").status().code() == StatusCode::kNotFound);
    CHECK(m.Calls(Operation::kListObjects) == 0);
    CHECK(m.Calls(Operation::kHeadObject) == 0);

    // Lookup counts stay exact: forgetting each answer drops every file.
    for (auto& r : answers.results) m.fs->Forget((*r)->attr.ino, 1);
    m.fs->Forget(again->attr.ino, 1);
    m.fs->Forget(small, 1);
    CHECK(m.fs->counters().inodes == 1);
    CHECK(answers.duplicates == 0);
  }

  TEST_CASE("lookups from many threads during a slow listing are all answered correctly") {
    Mount m;
    for (int i = 0; i < 2500; ++i) m.Put(fmt::format("d/f{:04}", i), std::string(i % 7, 'a'));
    m.Put("d/sub/inner");
    m.Put("d/sub");  // hidden by the directory sub/
    InodeId d = m.Dir("d");
    m.CountListingsOf("d/");
    m.faults->SetLatency(Operation::kListObjects, std::chrono::milliseconds(20));
    m.fake->ResetCallCounts();

    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = t; i < 2600; i += 8) {
          std::string name = i < 2500 ? fmt::format("f{:04}", i) : fmt::format("absent{}", i);
          if (i == 2555) name = "sub";
          auto r = m.Lookup(d, name);
          bool good = i == 2555  ? (r.ok() && r->attr.is_dir)
                      : i < 2500 ? (r.ok() && r->attr.size == static_cast<uint64_t>(i % 7))
                                 : r.status().code() == StatusCode::kNotFound;
          if (!good) ++wrong;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(wrong == 0);
    CHECK(m.listing_pages == 3);  // one listing of 3 pages, never one per thread
    CHECK(m.Calls(Operation::kHeadObject) <= 1);
    CHECK(m.Calls(Operation::kListObjects) <= 4);
  }

  TEST_CASE("names absent from the listing are ENOENT without a HEAD") {
    Mount m;
    m.Put("dir/a");
    m.Put("dir/b/c");
    InodeId dir = m.Dir("dir");
    m.fake->ResetCallCounts();
    auto missing = m.Lookup(dir, "zzz");
    CHECK(missing.status().code() == StatusCode::kNotFound);
    CHECK(missing.status().reason() == StatusReason::kKnownAbsent);  // from the listing
    // A one-page directory answers its first lookup from that page: one LIST, no HEAD.
    CHECK(m.Calls(Operation::kListObjects) == 1);
    CHECK(m.Calls(Operation::kHeadObject) == 0);
    CHECK(m.Lookup(dir, "a").ok());
    CHECK(m.Lookup(dir, "b")->attr.is_dir);
    CHECK(m.Lookup(dir, "zzz").status().code() == StatusCode::kNotFound);
    CHECK(m.Calls(Operation::kListObjects) == 1);
    CHECK(m.Calls(Operation::kHeadObject) == 0);
  }

  TEST_CASE("a failing listing falls back to HEAD+LIST for every waiter") {
    Mount m;
    for (int i = 0; i < 1500; ++i) m.Put(fmt::format("d/f{:04}", i), "abc");
    InodeId d = m.Dir("d");
    std::atomic<int> listing_calls{0};
    SUBCASE("first page fails") {
      m.faults->SetFault(Operation::kListObjects,
                         [&](const s3::RequestInfo& r) -> std::optional<Status> {
                           if (r.key != "d/") return std::nullopt;
                           ++listing_calls;
                           return Status::Unavailable("injected 503");
                         });
    }
    SUBCASE("second page fails") {
      m.faults->SetFault(Operation::kListObjects,
                         [&](const s3::RequestInfo& r) -> std::optional<Status> {
                           if (r.key != "d/") return std::nullopt;
                           if (++listing_calls == 2) return Status::Unavailable("page 2");
                           return std::nullopt;
                         });
    }
    m.faults->SetLatency(Operation::kListObjects, std::chrono::milliseconds(10));
    Answers answers(40);
    for (int i = 0; i < 40; ++i) {
      std::string name = i < 30 ? fmt::format("f{:04}", i * 37) : fmt::format("ghost{}", i);
      m.fs->Lookup(d, name, answers.For(i));
    }
    answers.WaitAll();
    for (int i = 0; i < 40; ++i) {
      const Result<Entry>& r = *answers.results[i];
      if (i < 30) {
        CHECK(r.ok());  // never the listing's 503
      } else {
        CHECK(r.status().code() == StatusCode::kNotFound);  // from HEAD 404, not the 503
      }
    }
    // Held off for negative_ttl: the next lookups do not list again.
    int calls = listing_calls;
    CHECK(m.Lookup(d, "f1499").ok());
    CHECK(listing_calls == calls);
    // After it, a lookup lists again (and, the fault gone, answers from the listing).
    m.faults->ClearFaults();
    m.CountListingsOf("d/");
    m.clock.Advance(std::chrono::seconds(11));
    m.fake->ResetCallCounts();
    CHECK(m.Lookup(d, "f0001").ok());
    m.fake->WaitIdle();
    CHECK(m.listing_pages == 2);
  }

  TEST_CASE("a directory over the page budget never stalls a lookup past the budget") {
    constexpr uint32_t kBudget = 5;
    Mount m(kBudget);
    for (int i = 0; i < 50'000; ++i) m.Put(fmt::format("huge/f{:05}", i));
    InodeId huge = m.Dir("huge");
    m.CountListingsOf("huge/");
    m.faults->SetLatency(Operation::kListObjects, std::chrono::milliseconds(10));
    m.faults->SetLatency(Operation::kHeadObject, std::chrono::milliseconds(10));

    // The first lookup waits for one page, then HEAD+LIST: it is answered long before the
    // listing reaches its budget (page 5 of 50).
    int pages_when_first_answered = -1;
    auto first = Await<Entry>([&](auto cb) {
      m.fs->Lookup(huge, "f49999", [&, cb](Result<Entry> r) {
        pages_when_first_answered = m.listing_pages;
        cb(std::move(r));
      });
    });
    REQUIRE(first.ok());
    CHECK(pages_when_first_answered <= 3);

    // Others wait at most until the budget, then fall back; all are answered correctly.
    Answers answers(20);
    for (int i = 0; i < 20; ++i) {
      m.fs->Lookup(huge, i < 10 ? fmt::format("f{:05}", i * 4999) : fmt::format("no{}", i),
                   answers.For(i));
    }
    answers.WaitAll();
    for (int i = 0; i < 20; ++i) {
      CHECK(answers.results[i]->ok() == (i < 10));
    }
    m.faults->ClearFaults();
    m.CountListingsOf("huge/");  // counting continues from here
    int budget_pages = m.listing_pages;
    CHECK(budget_pages == static_cast<int>(kBudget));  // stopped at the budget, never 50 pages

    // Over the budget: lookups go straight to HEAD+LIST until metadata_ttl passes.
    m.fake->ResetCallCounts();
    CHECK(m.Lookup(huge, "f00042").ok());
    CHECK(m.listing_pages == budget_pages);
    CHECK(m.Calls(Operation::kHeadObject) == 1);
    m.clock.Advance(std::chrono::seconds(101));
    CHECK(m.Lookup(huge, "f00043").ok());
    m.fake->WaitIdle();
    CHECK(m.listing_pages == budget_pages + static_cast<int>(kBudget));
  }

  TEST_CASE("the listing expires with metadata_ttl; new objects appear after it") {
    Mount m;
    m.Put("d/a");
    InodeId d = m.Dir("d");
    CHECK(m.Lookup(d, "b").status().code() == StatusCode::kNotFound);
    m.Put("d/b");
    m.clock.Advance(std::chrono::seconds(50));
    CHECK(m.Lookup(d, "b").status().code() == StatusCode::kNotFound);  // listing still fresh
    m.clock.Advance(std::chrono::seconds(51));
    m.fake->ResetCallCounts();
    auto b = m.Lookup(d, "b");
    REQUIRE(b.ok());
    CHECK(m.Calls(Operation::kListObjects) == 1);  // a new one-page listing answered it
    CHECK(m.Calls(Operation::kHeadObject) == 0);
  }

  TEST_CASE("turned off: every lookup is HEAD+LIST as before") {
    for (auto [pages, ttl] :
         {std::pair{0u, std::chrono::seconds(100)}, std::pair{16u, std::chrono::seconds(0)}}) {
      const auto& pages_ = pages;  // clang 14 cannot capture a structured binding
      CAPTURE(pages_);
      Mount m(pages, ttl);
      m.Put("d/a");
      m.Put("d/b");
      InodeId d = m.Dir("d");
      m.fake->ResetCallCounts();
      CHECK(m.Lookup(d, "a").ok());
      CHECK(m.Lookup(d, "b").ok());
      CHECK(m.Lookup(d, "c").status().code() == StatusCode::kNotFound);
      CHECK(m.Calls(Operation::kHeadObject) == 3);
      CHECK(m.Calls(Operation::kListObjects) == 3);
    }
  }

  TEST_CASE("forgetting the directory while its listing is in flight answers the waiters") {
    Mount m;
    m.Put("d/a");
    InodeId d = m.Dir("d");
    m.faults->SetLatency(Operation::kListObjects, std::chrono::milliseconds(50));
    auto promise = std::make_shared<std::promise<Result<Entry>>>();
    auto future = promise->get_future();
    m.fs->Lookup(d, "a", [promise](Result<Entry> r) { promise->set_value(std::move(r)); });
    m.fs->Forget(d, 1);  // the kernel would not do this during a lookup; we still answer once
    auto r = future.get();
    CHECK((r.ok() || r.status().reason() == StatusReason::kStaleInode));
    m.fake->WaitIdle();
  }

  TEST_CASE("destroying the file system with a listing in flight still answers every waiter") {
    auto m = std::make_unique<Mount>();
    for (int i = 0; i < 3000; ++i) m->Put(fmt::format("d/f{}", i));
    InodeId d = m->Dir("d");
    m->faults->SetLatency(Operation::kListObjects, std::chrono::milliseconds(30));
    Answers answers(5);
    for (int i = 0; i < 5; ++i) m->fs->Lookup(d, fmt::format("f{}", i * 100), answers.For(i));
    m->fs.reset();
    answers.WaitAll();
    for (auto& r : answers.results) CHECK(r->ok());
    m.reset();  // every store callback has run
    CHECK(answers.duplicates == 0);
  }

  TEST_CASE("ListDirectoryBounded: complete, over budget, failing") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->CreateBucketForTest(kBucket);
    for (int i = 0; i < 2500; ++i) fake->PutObjectForTest(kBucket, fmt::format("p/{:04}", i), "");
    auto warn = std::make_shared<WarnOnce>();
    auto list = [&](uint32_t max_pages, std::vector<uint32_t>* more, int* requests) {
      return Await<std::shared_ptr<const DirListing>>([&](auto cb) {
        ListDirectoryBounded(
            fake, kBucket, "p/", warn, max_pages, [requests] { ++*requests; },
            [more](uint32_t pages) { more->push_back(pages); }, cb);
      });
    };
    std::vector<uint32_t> more;
    int requests = 0;
    auto whole = list(3, &more, &requests);
    REQUIRE(whole.ok());
    REQUIRE(*whole != nullptr);
    CHECK((*whole)->entries.size() == 2500);
    CHECK(requests == 3);
    CHECK(more == std::vector<uint32_t>{1, 2});

    more.clear();
    requests = 0;
    auto over = list(2, &more, &requests);
    REQUIRE(over.ok());
    CHECK(*over == nullptr);  // more than 2 pages: stopped, no listing
    CHECK(requests == 2);
    CHECK(more == std::vector<uint32_t>{1});

    auto faults = std::make_shared<FaultInjectingStore>(fake);
    faults->FailNext(Operation::kListObjects, 1, Status::Unavailable("injected"));
    auto failed = Await<std::shared_ptr<const DirListing>>([&](auto cb) {
      ListDirectoryBounded(faults, kBucket, "p/", warn, 3, nullptr, nullptr, cb);
    });
    CHECK(failed.status().code() == StatusCode::kUnavailable);
  }

  TEST_CASE("LookupListings: single flight, impatient waiters, hold-off") {
    LookupListings t;
    testing::FakeClock clock;
    auto waiter = [](std::string name, uint32_t max_pages) {
      return ListingWaiter{std::move(name), "k", max_pages, [](Result<Entry>) {}};
    };
    CHECK_FALSE(t.InFlight(5));
    CHECK(t.TryStart(5, clock.Now()));
    CHECK_FALSE(t.TryStart(5, clock.Now()));  // single flight
    CHECK(t.InFlight(5));
    t.Wait(5, waiter("starter", 1));
    t.Wait(5, waiter("a", 3));
    t.Wait(5, waiter("b", 3));
    CHECK(t.TakeImpatient(7, 1).empty());  // no such flight
    auto first = t.TakeImpatient(5, 1);
    REQUIRE(first.size() == 1);
    CHECK(first[0].name == "starter");
    CHECK(t.TakeImpatient(5, 2).empty());
    auto rest = t.Finish(5);
    REQUIRE(rest.size() == 2);
    CHECK(rest[0].name == "a");
    CHECK(rest[1].name == "b");
    CHECK_FALSE(t.InFlight(5));
    CHECK(t.Finish(5).empty());

    t.HoldOff(5, clock.Now(), std::chrono::seconds(10));
    CHECK_FALSE(t.TryStart(5, clock.Now()));
    clock.Advance(std::chrono::seconds(10));
    CHECK(t.TryStart(5, clock.Now()));
    CHECK(t.Finish(5).empty());
    t.HoldOff(6, clock.Now(), std::chrono::seconds(0));  // nothing to hold
    CHECK(t.TryStart(6, clock.Now()));

    // Bounded: many held-off directories do not grow the table without limit, and expired
    // entries go first.
    for (InodeId i = 100; i < 100 + 10'000; ++i) t.HoldOff(i, clock.Now(), std::chrono::seconds(1));
    clock.Advance(std::chrono::seconds(2));
    t.HoldOff(1, clock.Now(), std::chrono::seconds(5));
    CHECK_FALSE(t.TryStart(1, clock.Now()));
    CHECK(t.TryStart(100 + 9'999, clock.Now()));
  }
}

}  // namespace
}  // namespace reelfs::fuse

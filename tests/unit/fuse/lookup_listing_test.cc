// The pieces of fuse/core/lookup_listing.h on their own: the bounded pager and the flight table.
#include "fuse/core/lookup_listing.h"

#include <future>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"

namespace reelfs::fuse {
namespace {

using s3::FakeObjectStore;
using s3::FaultInjectingStore;
using s3::Operation;

constexpr char kBucket[] = "bkt";

template <class T, class F>
Result<T> Call(F&& start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  return future.get();
}

TEST_SUITE("fuse") {
  TEST_CASE("ListDirectoryBounded: complete, over budget, failing") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->CreateBucketForTest(kBucket);
    for (int i = 0; i < 2500; ++i) fake->PutObjectForTest(kBucket, fmt::format("p/{:04}", i), "");
    auto warn = std::make_shared<WarnOnce>();
    auto list = [&](uint32_t max_pages, std::vector<uint32_t>* more, int* requests) {
      return Call<std::shared_ptr<const DirListing>>([&](auto cb) {
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
    auto failed = Call<std::shared_ptr<const DirListing>>([&](auto cb) {
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

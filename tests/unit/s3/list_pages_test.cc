// ListPages: the one ListObjectsV2 paging loop, against the in-memory fake store: every page in
// order, the stop condition, a failing page, a server whose tokens never end, and the blocking
// form.

#include "s3/list_pages.h"

#include <future>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/misbehaving_store.h"

namespace reelfs::s3 {
namespace {

std::shared_ptr<FakeObjectStore> StoreWith(int n) {
  auto store = std::make_shared<FakeObjectStore>();
  for (int i = 0; i < n; ++i) store->PutObjectForTest("bkt", "k" + std::to_string(i), "x");
  return store;
}

struct Run {
  Status status = Status::Internal("done not called");
  std::vector<std::vector<std::string>> pages;  // keys per page
  std::vector<bool> last;
  int requests = 0;
  int done_calls = 0;
};

// Lists `bucket` with `max_keys` a page; stops after `stop_after` pages (0: never).
Run ListAll(std::shared_ptr<ObjectStore> store, int max_keys, size_t stop_after = 0) {
  auto run = std::make_shared<Run>();
  std::promise<void> finished;
  ListObjectsRequest req{.bucket = "bkt", .max_keys = max_keys};
  ListPages(std::move(store), req,
            {.on_request = [run] { ++run->requests; },
             .on_page =
                 [run, stop_after](ListObjectsPage page, bool last) {
                   std::vector<std::string> keys;
                   for (const ObjectInfo& o : page.objects) keys.push_back(o.key);
                   run->pages.push_back(std::move(keys));
                   run->last.push_back(last);
                   return stop_after == 0 || run->pages.size() < stop_after;
                 },
             .done =
                 [run, &finished](Status s) {
                   run->status = std::move(s);
                   ++run->done_calls;
                   finished.set_value();
                 }});
  finished.get_future().wait();
  return *run;
}

TEST_CASE("ListPages: every page in order, one request each, last flagged once") {
  Run r = ListAll(StoreWith(5), 2);
  CHECK(r.status.ok());
  CHECK(r.done_calls == 1);
  CHECK(r.requests == 3);
  CHECK(r.pages == std::vector<std::vector<std::string>>{{"k0", "k1"}, {"k2", "k3"}, {"k4"}});
  CHECK(r.last == std::vector<bool>{false, false, true});
}

TEST_CASE("ListPages: on_page returning false stops the listing, done is OK") {
  Run r = ListAll(StoreWith(9), 2, /*stop_after=*/2);
  CHECK(r.status.ok());
  CHECK(r.done_calls == 1);
  CHECK(r.requests == 2);
  CHECK(r.pages.size() == 2);
}

TEST_CASE("ListPages: a failing page ends the listing with the store's status") {
  auto faults = std::make_shared<FaultInjectingStore>(StoreWith(5));
  // The second page fails: the first was delivered, nothing is requested after.
  int calls = 0;
  faults->SetFault(Operation::kListObjects, [&calls](const RequestInfo&) {
    return ++calls == 2 ? Status::Unavailable("injected 503") : Status::Ok();
  });
  Run r = ListAll(faults, 2);
  CHECK(r.status.code() == StatusCode::kUnavailable);
  CHECK(r.status.message().find("injected 503") != std::string::npos);
  CHECK(r.done_calls == 1);
  CHECK(r.pages.size() == 1);
  CHECK(r.requests == 2);
}

TEST_CASE("ListPages: a server whose tokens never end fails with kDataLoss, bounded") {
  using Fault = testing::MisbehavingStore::Fault;
  for (Fault fault : {Fault::kRepeatToken, Fault::kTokenCycle, Fault::kTruncatedNoToken}) {
    CAPTURE(static_cast<int>(fault));
    auto bad = std::make_shared<testing::MisbehavingStore>(StoreWith(3));
    bad->fault = fault;
    Run r = ListAll(bad, 1000);
    CHECK(r.status.code() == StatusCode::kDataLoss);
    CHECK(r.status.message().find("ListObjectsV2 bkt/") != std::string::npos);
    CHECK(r.done_calls == 1);
    CHECK(bad->list_calls.load() <= 3);
  }
}

TEST_CASE("ListPagesBlocking: pages in order on the caller's behalf, and its errors") {
  auto store = StoreWith(5);
  std::vector<std::string> keys;
  Status s = ListPagesBlocking(*store, {.bucket = "bkt", .max_keys = 2},
                               [&keys](ListObjectsPage page, bool) {
                                 for (const ObjectInfo& o : page.objects) keys.push_back(o.key);
                                 return true;
                               });
  CHECK(s.ok());
  CHECK(keys == std::vector<std::string>{"k0", "k1", "k2", "k3", "k4"});
  Status missing =
      ListPagesBlocking(*store, {.bucket = "nope"}, [](ListObjectsPage, bool) { return true; });
  CHECK_FALSE(missing.ok());
}

}  // namespace
}  // namespace reelfs::s3

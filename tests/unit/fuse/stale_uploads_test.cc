// The mount's sweep of stale multipart uploads (fuse/core/stale_uploads.h) against the fake
// store: what is aborted (before the cutoff, under the prefix), what is kept (younger, another
// prefix), paging, and failures that are reported, never thrown.
#include "fuse/core/stale_uploads.h"

#include <thread>

#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"

namespace reelfs::fuse {
namespace {

using std::chrono::hours;

std::string Create(s3::ObjectStore& store, const std::string& key) {
  auto id = s3::Await<std::string>([&](auto cb) {
    store.CreateMultipartUpload({"b", key, "", {}}, std::move(cb));
  });
  REQUIRE(id.ok());
  return *id;
}

std::vector<std::string> UploadKeys(s3::ObjectStore& store) {
  s3::ListMultipartUploadsRequest req;
  req.bucket = "b";
  auto page = s3::Await<s3::ListMultipartUploadsPage>(
      [&](auto cb) { store.ListMultipartUploads(req, std::move(cb)); });
  REQUIRE(page.ok());
  std::vector<std::string> keys;
  for (const auto& u : page->uploads) keys.push_back(u.key);
  return keys;
}

TEST_SUITE("fuse") {
  TEST_CASE("the sweep aborts old uploads under the prefix and keeps young ones") {
    testing::FakeClock clock;
    s3::FakeObjectStore store({.clock = &clock});
    store.CreateBucketForTest("b");
    Create(store, "mnt/old-1");
    Create(store, "mnt/sub/old-2");
    Create(store, "other/old");  // not under the mount's prefix
    clock.Advance(hours(25));
    const s3::WallTime mount_started = clock.WallNow();
    Create(store, "mnt/young");  // e.g. another host writing now
    StaleUploadReport r =
        SweepStaleUploads(store, {"b", "mnt/", mount_started - std::chrono::hours(24)});
    CHECK(r.status.ok());
    CHECK(r.listed == 3);
    CHECK(r.aborted == 2);
    CHECK(r.kept == 1);
    CHECK(UploadKeys(store) == std::vector<std::string>{"mnt/young", "other/old"});
  }

  TEST_CASE("an upload of the same age as the cutoff is kept (strictly before)") {
    testing::FakeClock clock;
    s3::FakeObjectStore store({.clock = &clock});
    store.CreateBucketForTest("b");
    Create(store, "k");
    StaleUploadReport r = SweepStaleUploads(store, {"b", "", clock.WallNow()});
    CHECK(r.aborted == 0);
    CHECK(r.kept == 1);
  }

  TEST_CASE("the sweep pages through more uploads than one page holds") {
    testing::FakeClock clock;
    s3::FakeObjectStore store({.clock = &clock});
    store.CreateBucketForTest("b");
    // Two uploads per key, so a page can end between uploads of one key (upload-id-marker).
    for (int i = 0; i < 1100; ++i) {
      Create(store, "k" + std::to_string(i % 550));
    }
    clock.Advance(hours(2));
    StaleUploadReport r = SweepStaleUploads(store, {"b", "", clock.WallNow() - hours(1)});
    CHECK(r.status.ok());
    CHECK(r.aborted == 1100);
    CHECK(UploadKeys(store).empty());
    CHECK(store.CallCount(s3::Operation::kListMultipartUploads) >= 2);
  }

  TEST_CASE("a failed listing or abort is reported and the rest still goes") {
    testing::FakeClock clock;
    auto fake = std::make_shared<s3::FakeObjectStore>(s3::FakeObjectStoreOptions{.clock = &clock});
    fake->CreateBucketForTest("b");
    Create(*fake, "a");
    Create(*fake, "b");
    clock.Advance(hours(2));
    s3::FaultInjectingStore faulty(fake);
    faulty.SetFault(s3::Operation::kAbortMultipartUpload,
                    [](const s3::RequestInfo& info) -> std::optional<Status> {
                      if (info.key == "a") return Status::Unavailable("injected");
                      return std::nullopt;
                    });
    StaleUploadReport r = SweepStaleUploads(faulty, {"b", "", clock.WallNow()});
    CHECK_FALSE(r.status.ok());
    CHECK(r.aborted == 1);
    CHECK(UploadKeys(*fake) == std::vector<std::string>{"a"});

    faulty.SetFault(s3::Operation::kListMultipartUploads,
                    [](const s3::RequestInfo&) -> std::optional<Status> {
                      return Status::PermissionDenied("no");
                    });
    r = SweepStaleUploads(faulty, {"b", "", clock.WallNow()});
    CHECK(r.status.code() == StatusCode::kPermissionDenied);
    CHECK(r.aborted == 0);
  }

  TEST_CASE("StaleUploadSweep runs in the background and is joined when destroyed") {
    testing::FakeClock clock;
    auto fake = std::make_shared<s3::FakeObjectStore>(s3::FakeObjectStoreOptions{.clock = &clock});
    fake->CreateBucketForTest("b");
    Create(*fake, "x");
    Create(*fake, "y");
    clock.Advance(hours(2));
    // Stopped at once: the destructor joins whatever it was doing (at most one request).
    { auto stopped = StaleUploadSweep::Start(fake, {"b", "", clock.WallNow() - hours(1)}); }
    auto sweep = StaleUploadSweep::Start(fake, {"b", "", clock.WallNow() - hours(1)});
    // Start returned before the sweep did its work; wait for it (no clock involved).
    while (fake->CallCount(s3::Operation::kAbortMultipartUpload) < 2 ||
           !UploadKeys(*fake).empty()) {
      std::this_thread::yield();
    }
    sweep.reset();
    CHECK(UploadKeys(*fake).empty());
  }
}

}  // namespace
}  // namespace reelfs::fuse

// FakeObjectStore's ListMultipartUploads / ListParts (the paging the mount's sweep relies on) and
// the fault-injecting decorator in front of them.
#include <doctest/doctest.h>

#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"

namespace reelfs::s3 {
namespace {

using Options = FakeObjectStoreOptions;

std::string Create(ObjectStore& store, const std::string& key) {
  auto id = Await<std::string>([&](auto cb) {
    store.CreateMultipartUpload({"b", key, "", {}}, std::move(cb));
  });
  REQUIRE(id.ok());
  return *id;
}

Result<ListMultipartUploadsPage> List(ObjectStore& store, ListMultipartUploadsRequest req) {
  req.bucket = "b";
  return Await<ListMultipartUploadsPage>(
      [&](auto cb) { store.ListMultipartUploads(req, std::move(cb)); });
}

TEST_SUITE("s3") {
  TEST_CASE("fake ListMultipartUploads: order, initiation time, prefix, delimiter, paging") {
    testing::FakeClock clock;
    FakeObjectStore store(
        Options{.callback_mode = Options::CallbackMode::kInline, .clock = &clock});
    store.CreateBucketForTest("b");
    const WallTime t0 = std::chrono::time_point_cast<std::chrono::milliseconds>(clock.WallNow());
    std::string k1 = Create(store, "d/k");
    clock.Advance(std::chrono::seconds(5));
    std::string k2 = Create(store, "d/k");  // same key, later
    std::string a = Create(store, "a");
    std::string sub = Create(store, "d/sub/x");

    auto all = List(store, {});
    REQUIRE(all.ok());
    REQUIRE(all->uploads.size() == 4);
    CHECK(all->uploads[0].key == "a");
    CHECK(all->uploads[1].upload_id == k1);
    CHECK(all->uploads[1].initiated == t0);
    CHECK(all->uploads[2].upload_id == k2);
    CHECK(all->uploads[2].initiated == t0 + std::chrono::seconds(5));
    CHECK(all->uploads[3].upload_id == sub);
    CHECK_FALSE(all->is_truncated);

    auto rolled = List(store, {.prefix = "d/", .delimiter = "/"});
    REQUIRE(rolled.ok());
    CHECK(rolled->uploads.size() == 2);
    CHECK(rolled->common_prefixes == std::vector<std::string>{"d/sub/"});

    // One per page: every upload exactly once, the page boundary inside key "d/k".
    std::vector<std::string> seen;
    ListMultipartUploadsRequest req{.max_uploads = 1};
    for (int pages = 0; pages < 10; ++pages) {
      auto page = List(store, req);
      REQUIRE(page.ok());
      for (const auto& u : page->uploads) seen.push_back(u.upload_id);
      if (!page->is_truncated) break;
      req.key_marker = page->next_key_marker;
      req.upload_id_marker = page->next_upload_id_marker;
    }
    CHECK(seen == std::vector<std::string>{a, k1, k2, sub});

    CHECK(List(store, {.key_marker = "d/k"})->uploads.size() == 1);  // all of d/k skipped
    CHECK(List(store, {.key_marker = "d/k", .upload_id_marker = k1})->uploads.size() == 2);

    ListMultipartUploadsRequest missing;
    missing.bucket = "nope";
    auto none = Await<ListMultipartUploadsPage>(
        [&](auto cb) { store.ListMultipartUploads(missing, std::move(cb)); });
    CHECK(none.status().detail().s3_code == "NoSuchBucket");
  }

  TEST_CASE("fake ListParts: sizes, ETags, part-number-marker paging, NoSuchUpload") {
    FakeObjectStore store(Options{.callback_mode = Options::CallbackMode::kInline});
    store.CreateBucketForTest("b");
    std::string id = Create(store, "k");
    const std::string one(100, 'x');
    const std::string two(7, 'y');
    // Not a structured binding: clang 14 (the TSan build) cannot capture one in a lambda.
    for (const auto& part : {std::pair{1, &one}, std::pair{3, &two}}) {
      auto etag = Await<std::string>([&](auto cb) {
        store.UploadPart({"b", "k", id, part.first, std::as_bytes(std::span(*part.second))},
                         std::move(cb));
      });
      REQUIRE(etag.ok());
    }
    auto parts = Await<ListPartsPage>([&](auto cb) {
      store.ListParts({"b", "k", id, 0, 1}, std::move(cb));
    });
    REQUIRE(parts.ok());
    REQUIRE(parts->parts.size() == 1);
    CHECK(parts->parts[0].part_number == 1);
    CHECK(parts->parts[0].size == 100);
    CHECK(parts->is_truncated);
    CHECK(parts->next_part_number_marker == 1);
    parts = Await<ListPartsPage>([&](auto cb) {
      store.ListParts({"b", "k", id, 1, 1000}, std::move(cb));
    });
    REQUIRE(parts.ok());
    REQUIRE(parts->parts.size() == 1);
    CHECK(parts->parts[0].part_number == 3);
    CHECK(parts->parts[0].size == 7);
    CHECK_FALSE(parts->is_truncated);
    auto gone = Await<ListPartsPage>([&](auto cb) {
      store.ListParts({"b", "k", "nope", 0, 1000}, std::move(cb));
    });
    CHECK(gone.status().detail().s3_code == "NoSuchUpload");
  }

  TEST_CASE("FaultInjectingStore fails ListMultipartUploads and ListParts on request") {
    auto fake = std::make_shared<FakeObjectStore>();
    fake->CreateBucketForTest("b");
    std::string id = Create(*fake, "k");
    FaultInjectingStore faulty(fake);
    faulty.FailNext(Operation::kListMultipartUploads, 1, Status::Unavailable("injected"));
    CHECK(List(faulty, {}).status().code() == StatusCode::kUnavailable);
    CHECK(List(faulty, {})->uploads.size() == 1);
    faulty.FailNext(Operation::kListParts, 1, Status::Unavailable("injected"));
    auto parts = Await<ListPartsPage>([&](auto cb) {
      faulty.ListParts({"b", "k", id, 0, 1000}, std::move(cb));
    });
    CHECK(parts.status().code() == StatusCode::kUnavailable);
  }
}

}  // namespace
}  // namespace reelfs::s3

// Store's multipart listings (ListMultipartUploads / ListParts order and paging) and the expiry
// of stale uploads (UploadExpiry): catalog rows and part files gone, counters moved.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "gateway/store/store.h"
#include "gateway/store/upload_expiry.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-mpu.XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::unique_ptr<Store> OpenStore(const TempDir& dir) {
  auto store = Store::Open(dir.path);
  REQUIRE(store.ok());
  REQUIRE((*store)->CreateBucket("b").ok());
  return std::move(*store);
}

void PutPart(Store& store, const std::string& key, const std::string& id, int n,
             const std::string& body) {
  auto upload = store.GetUpload("b", key, id);
  REQUIRE(upload.ok());
  auto tmp = store.fs().CreateTmp("test");
  REQUIRE(tmp.ok());
  REQUIRE(tmp->Write(body).ok());
  REQUIRE(store.PutPart(*upload, n, *tmp, s3::Md5Hex(body)).ok());
}

std::vector<std::string> Ids(const s3::ListMultipartUploadsPage& page) {
  std::vector<std::string> out;
  for (const auto& u : page.uploads) out.push_back(u.upload_id);
  return out;
}

uint64_t DirBytes(const std::string& path) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(path)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

TEST_SUITE("gateway") {
  TEST_CASE("ListUploads: key then initiation order, prefix, delimiter, both markers") {
    TempDir dir;
    auto store = OpenStore(dir);
    auto k1 = store->CreateUpload("b", "d/k", {});
    auto k2 = store->CreateUpload("b", "d/k", {});
    auto a = store->CreateUpload("b", "a", {});
    auto sub = store->CreateUpload("b", "d/sub/x", {});
    REQUIRE((k1.ok() && k2.ok() && a.ok() && sub.ok()));

    auto all = store->ListUploads("b", {});
    REQUIRE(all.ok());
    CHECK(Ids(*all) == std::vector<std::string>{*a, *k1, *k2, *sub});
    CHECK(all->uploads[1].initiated <= all->uploads[2].initiated);

    auto rolled = store->ListUploads("b", {.prefix = "d/", .delimiter = "/"});
    REQUIRE(rolled.ok());
    CHECK(Ids(*rolled) == std::vector<std::string>{*k1, *k2});
    CHECK(rolled->common_prefixes == std::vector<std::string>{"d/sub/"});

    // Pages of one: every upload once, a boundary inside "d/k" (upload-id-marker), and a
    // prefix rolled up once across pages.
    std::vector<std::string> seen;
    std::vector<std::string> prefixes;
    UploadListParams params{.delimiter = "/", .max_uploads = 1};
    for (int pages = 0; pages < 10; ++pages) {
      auto page = store->ListUploads("b", params);
      REQUIRE(page.ok());
      for (const auto& u : page->uploads) seen.push_back(u.upload_id);
      for (const auto& p : page->common_prefixes) prefixes.push_back(p);
      if (!page->is_truncated) break;
      params.key_marker = page->next_key_marker;
      params.upload_id_marker = page->next_upload_id_marker;
    }
    CHECK(seen == std::vector<std::string>{*a});
    CHECK(prefixes == std::vector<std::string>{"d/"});

    CHECK(store->ListUploads("b", {.key_marker = "d/k"})->uploads.size() == 1);
    CHECK(store->ListUploads("b", {.key_marker = "d/k", .upload_id_marker = *k1})->uploads.size() ==
          2);
    CHECK(store->ListUploads("b", {.max_uploads = 0})->uploads.empty());
    CHECK(store->ListUploads("nope", {}).status().detail().s3_code == "NoSuchBucket");
  }

  TEST_CASE("ListUploadParts: sizes, MD5 ETags, part-number-marker paging") {
    TempDir dir;
    auto store = OpenStore(dir);
    auto id = store->CreateUpload("b", "k", {});
    REQUIRE(id.ok());
    PutPart(*store, "k", *id, 2, "second");
    PutPart(*store, "k", *id, 1, std::string(1000, 'x'));
    auto upload = store->GetUpload("b", "k", *id);
    REQUIRE(upload.ok());
    auto page = store->ListUploadParts(*upload, 0, 1);
    REQUIRE(page.ok());
    REQUIRE(page->parts.size() == 1);
    CHECK(page->parts[0].part_number == 1);
    CHECK(page->parts[0].size == 1000);
    CHECK(page->parts[0].etag == s3::Md5Hex(std::string(1000, 'x')));
    CHECK(page->is_truncated);
    CHECK(page->next_part_number_marker == 1);
    page = store->ListUploadParts(*upload, 1, 1000);
    REQUIRE(page.ok());
    REQUIRE(page->parts.size() == 1);
    CHECK(page->parts[0].part_number == 2);
    CHECK(page->parts[0].size == 6);
    CHECK(page->parts[0].last_modified.time_since_epoch().count() > 0);
    CHECK_FALSE(page->is_truncated);
  }

  TEST_CASE("ExpireUploads aborts what is older than the cutoff and frees its parts") {
    TempDir dir;
    auto store = OpenStore(dir);
    auto old_id = store->CreateUpload("b", "old", {});
    REQUIRE(old_id.ok());
    PutPart(*store, "old", *old_id, 1, std::string(300000, 'o'));
    PutPart(*store, "old", *old_id, 2, std::string(5000, 'p'));
    const std::string uploads_dir = dir.path + "/.reelfs-gateway/uploads";
    CHECK(DirBytes(uploads_dir) == 305000);
    const int64_t cutoff = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    auto young_id = store->CreateUpload("b", "young", {});  // after the cutoff
    REQUIRE(young_id.ok());
    // The system clock may not have moved since the cutoff was read: make sure it did.
    while (store->ListUploads("b", {.prefix = "young"})->uploads[0].initiated.time_since_epoch() <=
           std::chrono::nanoseconds(cutoff)) {
      REQUIRE(store->AbortUpload(*store->GetUpload("b", "young", *young_id)).ok());
      young_id = store->CreateUpload("b", "young", {});
      REQUIRE(young_id.ok());
    }

    auto expired = store->ExpireUploads(cutoff);
    REQUIRE(expired.ok());
    REQUIRE(expired->size() == 1);
    CHECK((*expired)[0].upload.id == *old_id);
    CHECK((*expired)[0].parts == 2);
    CHECK((*expired)[0].bytes == 305000);
    CHECK(store->GetUpload("b", "old", *old_id).status().detail().s3_code == "NoSuchUpload");
    CHECK(store->GetUpload("b", "young", *young_id).ok());
    CHECK(DirBytes(uploads_dir) == 0);
    CHECK_FALSE(fs::exists(uploads_dir + "/" + *old_id));
    Store::UploadExpiryStats stats = store->upload_expiry_stats();
    CHECK(stats.uploads == 1);
    CHECK(stats.parts == 2);
    CHECK(stats.bytes == 305000);
  }

  TEST_CASE("UploadExpiry sweeps at construction, then on its interval") {
    TempDir dir;
    auto store = OpenStore(dir);
    auto id = store->CreateUpload("b", "k", {});
    REQUIRE(id.ok());
    {
      // Everything is older than 1 ns by now: the constructor's sweep takes it.
      UploadExpiry expiry(*store, std::chrono::nanoseconds(1), std::chrono::hours(1));
      CHECK(store->ListUploads("b", {})->uploads.empty());
      CHECK(store->upload_expiry_stats().uploads == 1);
    }
    auto later = store->CreateUpload("b", "k2", {});
    REQUIRE(later.ok());
    UploadExpiry expiry(*store, std::chrono::nanoseconds(1), std::chrono::milliseconds(1));
    CHECK(store->upload_expiry_stats().uploads == 2);
    auto again = store->CreateUpload("b", "k3", {});
    REQUIRE(again.ok());
    // The periodic sweep takes it; wait on the counter (no timed assertion).
    while (store->upload_expiry_stats().uploads < 3) std::this_thread::yield();
    CHECK(store->ListUploads("b", {})->uploads.empty());
    CHECK(UploadExpiry::DefaultInterval(std::chrono::hours(24 * 7)) == std::chrono::hours(1));
    CHECK(UploadExpiry::DefaultInterval(std::chrono::seconds(3)) == std::chrono::seconds(1));
  }
}

}  // namespace
}  // namespace reelfs::gateway

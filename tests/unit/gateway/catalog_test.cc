// Catalog's prepared-statement cache: statements are reused, come back usable after a failed step,
// never leave a read transaction open, and survive schema changes made through another connection
// (including the objects-table rebuild a second Catalog::Open does on a version mismatch).
#include "gateway/store/catalog.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <sqlite3.h>

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-catalog.XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

// A second, raw connection to the same file (what another process or tool would do).
struct RawDb {
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
  }
  ~RawDb() { sqlite3_close(db); }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    INFO(sql << ": " << (err ? err : ""));
    sqlite3_free(err);
    REQUIRE(rc == SQLITE_OK);
  }
  sqlite3* db = nullptr;
};

ObjectRecord Record(const std::string& key, const std::string& etag) {
  ObjectRecord r;
  r.key = key;
  r.size = key.size();
  r.etag = etag;
  r.mtime_ns = 1234;
  r.content_type = "text/" + key;
  r.user_meta = {{"m", key}};
  return r;
}

// A Catalog on a new file in a new directory, closed before the directory is removed (members
// are destroyed in reverse order).
struct FreshCatalog {
  FreshCatalog() {
    auto opened = Catalog::Open(path);
    REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
    owned = std::move(*opened);
  }
  Catalog& catalog() { return *owned; }

  TempDir dir;
  std::string path = dir.path + "/c.db";
  std::unique_ptr<Catalog> owned;
};

std::optional<ObjectRecord> Get(Catalog& cat, const std::string& key) {
  auto got = cat.GetObject("bkt", key);
  REQUIRE_MESSAGE(got.ok(), got.status().ToString());
  return *got;
}

TEST_CASE("Catalog: repeated queries reuse their cached statements") {
  FreshCatalog fresh;
  Catalog& c = fresh.catalog();
  REQUIRE(c.PutObject("bkt", Record("a", "e1")).ok());
  REQUIRE(Get(c, "a").has_value());
  CHECK_FALSE(Get(c, "missing").has_value());
  const size_t cached = c.TestOnlyCachedStatements();
  CHECK(cached > 0);
  for (int i = 0; i < 50; ++i) {
    std::string key = "k" + std::to_string(i);
    REQUIRE(c.PutObject("bkt", Record(key, "e" + key)).ok());
    auto got = Get(c, key);
    REQUIRE(got.has_value());
    // Every bound value is this call's, not a previous one's.
    CHECK(got->etag == "e" + key);
    CHECK(got->content_type == "text/" + key);
    CHECK(got->user_meta.at("m") == key);
  }
  CHECK(c.TestOnlyCachedStatements() == cached);
  // A listing shape is one more statement, however often it runs.
  for (int i = 0; i < 3; ++i) REQUIRE(c.ListObjects("bkt", "", true, "", 10).ok());
  CHECK(c.TestOnlyCachedStatements() == cached + 1);
}

TEST_CASE("Catalog: a statement whose step failed is usable again, with fresh bindings") {
  FreshCatalog fresh;
  Catalog& c = fresh.catalog();
  UploadRecord u;
  u.id = "u1";
  u.bucket = "bkt";
  u.key = "one";
  u.content_type = "text/one";
  u.user_meta = {{"x", "1"}};
  REQUIRE(c.PutUpload(u).ok());
  // Same id: the INSERT violates the primary key; the cached statement keeps the error until reset.
  CHECK_FALSE(c.PutUpload(u).ok());
  UploadRecord v;
  v.id = "u2";
  v.bucket = "bkt";
  v.key = "two";
  v.content_type = "text/two";
  auto put = c.PutUpload(v);
  REQUIRE_MESSAGE(put.ok(), put.ToString());
  auto got = c.GetUpload("u2");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->key == "two");
  CHECK((*got)->content_type == "text/two");
  CHECK((*got)->user_meta.empty());
  auto first = c.GetUpload("u1");
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->key == "one");
  // The failed statement left no transaction behind: a write transaction starts and commits.
  Status tx = c.InTransaction([&] { return c.PutObject("bkt", Record("t", "et")); });
  REQUIRE_MESSAGE(tx.ok(), tx.ToString());
  // A failing function rolls back, and the statements used inside it work afterwards.
  Status rolled = c.InTransaction([&]() -> Status {
    REELFS_RETURN_IF_ERROR(c.PutObject("bkt", Record("gone", "eg")));
    return c.PutUpload(u);  // duplicate id: fails
  });
  CHECK_FALSE(rolled.ok());
  CHECK_FALSE(Get(c, "gone").has_value());
  CHECK(Get(c, "t").has_value());
}

TEST_CASE("Catalog: a lookup leaves no read transaction open (another writer's rows are seen)") {
  FreshCatalog fresh;
  const std::string& path = fresh.path;
  Catalog& c = fresh.catalog();
  REQUIRE(c.PutObject("bkt", Record("a", "ea")).ok());
  // GetObject returns at its first row, without stepping to the end: only the reset ends the
  // statement's read transaction. Were it still open, this connection's snapshot would predate
  // the other connection's insert below.
  REQUIRE(Get(c, "a").has_value());
  RawDb other(path);
  other.Exec(
      "INSERT INTO objects(bucket, key, size, etag, mtime_ns, content_type, storage_class, "
      "user_meta) VALUES('bkt', 'b', 1, 'eb', 0, '', 'STANDARD', '')");
  auto b = Get(c, "b");
  REQUIRE(b.has_value());
  CHECK(b->etag == "eb");
}

TEST_CASE("Catalog: cached statements survive schema changes and a rebuild by another Open") {
  FreshCatalog fresh;
  const std::string& path = fresh.path;
  Catalog& c = fresh.catalog();
  REQUIRE(c.PutObject("bkt", Record("a", "ea")).ok());
  REQUIRE(Get(c, "a").has_value());
  const size_t cached = c.TestOnlyCachedStatements();

  // Another connection changes the schema: the cached statements are recompiled by SQLite.
  {
    RawDb other(path);
    other.Exec("CREATE INDEX objects_by_etag ON objects(etag)");
    other.Exec("ALTER TABLE objects ADD COLUMN extra TEXT NOT NULL DEFAULT ''");
  }
  REQUIRE(c.PutObject("bkt", Record("b", "eb")).ok());
  auto b = Get(c, "b");
  REQUIRE(b.has_value());
  CHECK(b->etag == "eb");

  // A schema-version mismatch: a second Open drops and recreates the objects table under the
  // first Catalog's cached statements (the archive tables are kept).
  {
    RawDb other(path);
    other.Exec("PRAGMA user_version=1");
  }
  {
    auto second = Catalog::Open(path);
    REQUIRE_MESSAGE(second.ok(), second.status().ToString());
    CHECK((*second)->fresh());
  }
  CHECK_FALSE(Get(c, "a").has_value());  // the rebuilt table is empty
  REQUIRE(c.PutObject("bkt", Record("c", "ec")).ok());
  auto got = Get(c, "c");
  REQUIRE(got.has_value());
  CHECK(got->etag == "ec");
  CHECK(got->user_meta.at("m") == "c");
  CHECK(c.TestOnlyCachedStatements() == cached);
}

TEST_CASE("Catalog: concurrent readers and writers share the cache") {
  FreshCatalog fresh;
  Catalog& c = fresh.catalog();
  constexpr int kThreads = 4;
  constexpr int kOps = 300;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        std::string key = "t" + std::to_string(t) + "/" + std::to_string(i % 20);
        std::string etag = "e" + std::to_string(i);
        if (!c.PutObject("bkt", Record(key, etag)).ok()) ++bad[t];
        auto got = c.GetObject("bkt", key);
        // Only this thread writes this key: it reads back what it wrote.
        if (!got.ok() || !got->has_value() || (*got)->etag != etag) ++bad[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(bad[t] == 0);
  auto rows = c.ListObjects("bkt", "", true, "", 1000);
  REQUIRE(rows.ok());
  CHECK(rows->size() == kThreads * 20);
}

}  // namespace
}  // namespace reelfs::gateway

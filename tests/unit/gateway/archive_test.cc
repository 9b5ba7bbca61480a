// The gateway's archive with a fake tape library (tests/fakes/fake_tape_library.h): catalog
// schema migration and archive state that survives a rebuild, the archive writer and its tape
// image files, recalls (ok, joined, media error, stage failure, damaged image), the releaser's
// watermarks, and the personalities' headers and listing XML through S3Service in-process.
#include "gateway/archive/archive.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <sqlite3.h>

#include "gateway/archive/personality.h"
#include "gateway/s3api/faults.h"
#include "gateway/s3api/service.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/list_codec.h"
#include "s3/protocol/restore_header.h"
#include "s3/protocol/sigv4.h"
#include "tests/fakes/fake_tape_library.h"
#include "tests/unit/gateway/signed_request.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;
using testing::FakeTapeLibrary;
using Outcome = tape::RecallOutcome;
using namespace std::chrono_literals;

constexpr uint64_t kBlock = 4096;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string Content(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7 % 251));
  return s;
}

struct Env {
  explicit Env(ArchiveOptions options = {}) {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-arch.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    root = dir + "/root";
    Open(options);
  }
  ~Env() {
    Close();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void Open(ArchiveOptions options) {
    auto s = Store::Open(root);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    store = std::move(*s);
    library = std::make_unique<FakeTapeLibrary>(kBlock);
    auto a = Archive::Create(*store, *library, options, /*serve=*/true);
    REQUIRE_MESSAGE(a.ok(), a.status().ToString());
    archive = std::move(*a);
    ServiceOptions so;
    so.access_key = "AK";
    so.secret_key = "SK";
    service = std::make_unique<S3Service>(*store, so, archive.get(), faults.get());
  }
  void Close() {
    service.reset();
    archive.reset();
    library.reset();
    store.reset();
  }
  void Reopen(ArchiveOptions options = {}) {
    Close();
    Open(options);
  }
  void Put(const std::string& bucket, const std::string& key, const std::string& body) {
    if (!store->HeadBucket(bucket).ok()) REQUIRE(store->CreateBucket(bucket).ok());
    auto tmp = store->fs().CreateTmp("test");
    REQUIRE(tmp.ok());
    REQUIRE(tmp->Write(body).ok());
    REQUIRE(store->Put(bucket, key, *tmp, s3::Md5Hex(body), PutOptions{}).ok());
  }
  // bkt/on stays online; bkt/off (5 000 bytes) is archived and its disk copy released.
  void PutOnlineAndOffline() {
    Put("bkt", "on", "online bytes");
    Put("bkt", "off", Content(5000, 'o'));
    ArchiveRunOptions run;
    run.prefix = "off";
    run.release = true;
    REQUIRE(archive->Run(run).ok());
  }
  ArchiveRecord State(const std::string& bucket, const std::string& key) {
    auto a = store->catalog().GetArchive(bucket, key);
    REQUIRE(a.ok());
    REQUIRE(a->has_value());
    return **a;
  }
  // Completes every queued recall and waits for the copy threads.
  void Finish(Outcome outcome = Outcome::kOk) {
    library->CompleteAll(outcome);
    REQUIRE(archive->WaitIdle(10s));
  }

  http::Response Send(const std::string& method, const std::string& path, const std::string& query,
                      const std::string& body = {}, const TestHeaders& extra = {}) {
    return SendSigned(*service, method, path, query, body, extra);
  }
  static std::string Code(const http::Response& r) {
    auto err = s3::ParseErrorXml(r.body);
    return err.ok() ? err->code : "";
  }
  static const std::string* Header(const http::Response& r, std::string_view name) {
    for (const auto& [n, v] : r.headers) {
      if (n == name) return &v;
    }
    return nullptr;
  }

  std::string dir, root;
  std::unique_ptr<Store> store;
  std::unique_ptr<FakeTapeLibrary> library;
  std::unique_ptr<Archive> archive;
  std::unique_ptr<FaultInjector> faults;
  std::unique_ptr<S3Service> service;
};

const std::string kRestoreBody =
    "<RestoreRequest><Days>2</Days><GlacierJobParameters><Tier>Standard</Tier>"
    "</GlacierJobParameters></RestoreRequest>";

}  // namespace

TEST_SUITE("gateway.archive") {
  TEST_CASE("catalog: a schema-1 catalog is migrated; archive state survives a rebuild") {
    Env env;
    env.Put("bkt", "k1", Content(10000, 'a'));
    env.Put("bkt", "dir/k2", Content(5000, 'b'));
    ArchiveRunOptions run;
    run.release = true;
    auto report = env.archive->Run(run);
    REQUIRE(report.ok());
    CHECK(report->archived == 2);
    CHECK(report->released == 2);
    env.Close();

    // Pretend the objects schema changed: user_version of another version -> objects rebuilt
    // from the files (the placeholders), archive tables kept.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((env.root + "/.reelfs-gateway/catalog.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version=1", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    env.Open({});
    CHECK(env.store->catalog().fresh());
    auto head = env.store->Head("bkt", "k1");
    REQUIRE_MESSAGE(head.ok(), head.status().ToString());
    CHECK(head->size == 10000);
    CHECK(head->etag == s3::Md5Hex(Content(10000, 'a')));
    REQUIRE(head->archive.has_value());
    CHECK(head->archive->state == ArchiveState::kOffline);
    auto page = env.store->List("bkt", ListParams{});
    REQUIRE(page.ok());
    REQUIRE(page->objects.size() == 2);
    CHECK(page->objects[0].size == 5000);

    // A catalog from before the archive (schema 1, no archive tables) opens and gets them.
    env.Close();
    fs::remove(env.root + "/.reelfs-gateway/catalog.db");
    fs::remove(env.root + "/.reelfs-gateway/catalog.db-wal");
    fs::remove(env.root + "/.reelfs-gateway/catalog.db-shm");
    REQUIRE(sqlite3_open((env.root + "/.reelfs-gateway/catalog.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE objects(bucket TEXT, key TEXT, size INTEGER, etag TEXT, "
                         "mtime_ns INTEGER, content_type TEXT, storage_class TEXT, user_meta "
                         "TEXT, PRIMARY KEY(bucket, key)); PRAGMA user_version=1",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    auto cat = Catalog::Open(env.root + "/.reelfs-gateway/catalog.db");
    REQUIRE_MESSAGE(cat.ok(), cat.status().ToString());
    CHECK((*cat)->fresh());
    auto carts = (*cat)->Cartridges();
    REQUIRE(carts.ok());
    CHECK(carts->empty());
  }

  TEST_CASE("writer: extents in key order and striped, bytes in the images, release") {
    Env env;
    for (int i = 0; i < 6; ++i) env.Put("bkt", "k" + std::to_string(i), Content(5000 + i, 'a' + i));
    env.Put("bkt", "empty", "");
    ArchiveRunOptions run;
    run.cartridges = 2;
    run.striped = true;
    auto report = env.archive->Run(run);
    REQUIRE(report.ok());
    CHECK(report->archived == 6);
    CHECK(report->skipped == 1);  // the empty object
    CHECK(report->per_cartridge["RL0000L9"] == 3);
    CHECK(report->per_cartridge["RL0001L9"] == 3);
    CHECK(env.library->cartridges().count("RL0001L9") == 1);
    // k0 -> RL0000L9 block 0, k1 -> RL0001L9 block 0, k2 -> RL0000L9 block 2 (5002 B = 2 blocks).
    ArchiveRecord k2 = env.State("bkt", "k2");
    CHECK(k2.cartridge == "RL0000L9");
    CHECK(k2.start_block == 2);
    CHECK(k2.state == ArchiveState::kPremigrated);
    std::string img = ReadFile(env.root + "/.reelfs-gateway/tapes/RL0000L9.img");
    CHECK(img.size() == 6 * kBlock);
    CHECK(img.substr(2 * kBlock, 5002) == Content(5002, 'a' + 2));
    // A second run archives nothing new.
    auto again = env.archive->Run(run);
    REQUIRE(again.ok());
    CHECK(again->archived == 0);

    // Key order with one named cartridge appends after what is there.
    env.Put("bkt", "z", Content(100, 'z'));
    ArchiveRunOptions one;
    one.cartridge = "RL0000L9";
    one.release = true;
    report = env.archive->Run(one);
    REQUIRE(report.ok());
    CHECK(report->archived == 1);
    CHECK(env.State("bkt", "z").start_block == 6);
    CHECK(env.State("bkt", "z").state == ArchiveState::kOffline);
    CHECK(fs::file_size(env.root + "/bkt/z") == 0);  // the placeholder
    auto head = env.store->Head("bkt", "z");
    REQUIRE(head.ok());
    CHECK(head->size == 100);

    // Overwriting an archived object drops its archive row.
    env.Put("bkt", "k2", "new");
    auto gone = env.store->catalog().GetArchive("bkt", "k2");
    REQUIRE(gone.ok());
    CHECK_FALSE(gone->has_value());
  }

  TEST_CASE("recall: one per object, bytes back, StageFail, damaged image") {
    Env env;
    const std::string a = Content(9000, 'a'), c = Content(3000, 'c');
    env.Put("bkt", "a", a);
    env.Put("bkt", "c", c);
    ArchiveRunOptions run;
    run.cartridges = 2;
    run.release = true;
    REQUIRE(env.archive->Run(run).ok());

    auto s1 = env.archive->Restore("bkt", "a", 1);
    auto s2 = env.archive->Restore("bkt", "a", 1);
    REQUIRE(s1.ok());
    REQUIRE(s2.ok());
    CHECK(*s1 == RestoreStart::kStarted);
    CHECK(*s2 == RestoreStart::kJoined);
    CHECK(env.library->pending() == 1);
    CHECK(env.State("bkt", "a").staging);
    env.Finish();
    ArchiveRecord ra = env.State("bkt", "a");
    CHECK(ra.state == ArchiveState::kPremigrated);
    CHECK_FALSE(ra.staging);
    CHECK(ra.restored_ns > 0);
    CHECK(ra.expiry_ns > ra.restored_ns);
    CHECK(ReadFile(env.root + "/bkt/a") == a);
    auto head = env.store->Head("bkt", "a");  // the row still trusts the file (mtime kept)
    REQUIRE(head.ok());
    CHECK(head->etag == s3::Md5Hex(a));
    auto on_disk = env.archive->Restore("bkt", "a", 1);
    REQUIRE(on_disk.ok());
    CHECK(*on_disk == RestoreStart::kOnDisk);

    // Media error and stage failure: StageFail, still offline, nothing else touched.
    REQUIRE(env.archive->Restore("bkt", "c", std::nullopt).ok());
    env.Finish(Outcome::kMediaError);
    ArchiveRecord rc = env.State("bkt", "c");
    CHECK(rc.stage_fail);
    CHECK_FALSE(rc.staging);
    CHECK(rc.state == ArchiveState::kOffline);
    REQUIRE(env.archive->Restore("bkt", "c", std::nullopt).ok());
    CHECK_FALSE(env.State("bkt", "c").stage_fail);  // a new request clears it
    env.Finish(Outcome::kStageFail);
    CHECK(env.State("bkt", "c").stage_fail);

    // A truncated image: the recall fails cleanly; the other cartridge's object is intact.
    const std::string vsn = env.State("bkt", "c").cartridge;
    CHECK(vsn != ra.cartridge);
    fs::resize_file(env.root + "/.reelfs-gateway/tapes/" + vsn + ".img", 100);
    REQUIRE(env.archive->Restore("bkt", "c", std::nullopt).ok());
    env.Finish();
    rc = env.State("bkt", "c");
    CHECK(rc.stage_fail);
    CHECK(rc.state == ArchiveState::kOffline);
    CHECK(fs::file_size(env.root + "/bkt/c") == 0);
    CHECK(ReadFile(env.root + "/bkt/a") == a);
    // A corrupted (same length, other bytes) image fails on the MD5 check.
    {
      std::fstream f(env.root + "/.reelfs-gateway/tapes/" + vsn + ".img",
                     std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(0);
      f.write(std::string(kBlock, 'X').data(), kBlock);
    }
    REQUIRE(env.archive->Restore("bkt", "c", std::nullopt).ok());
    env.Finish();
    CHECK(env.State("bkt", "c").stage_fail);

    // Deleted during its recall: the recalled copy is dropped, nothing reappears.
    REQUIRE(env.store->Release("bkt", "a").ok());
    REQUIRE(env.archive->Restore("bkt", "a", std::nullopt).ok());
    REQUIRE(env.store->Delete("bkt", "a").ok());
    env.Finish();
    CHECK_FALSE(fs::exists(env.root + "/bkt/a"));
    CHECK_FALSE(env.store->Head("bkt", "a").ok());
  }

  TEST_CASE("front ends: restores recorded through other stores run once, in the owner") {
    Env env;  // the owner
    const std::string a = Content(9000, 'a'), b = Content(7000, 'b');
    env.Put("bkt", "a", a);
    env.Put("bkt", "b", b);
    ArchiveRunOptions run;
    run.release = true;
    REQUIRE(env.archive->Run(run).ok());

    // Two front ends: their own Store (catalog connection, key-lock description, tmp directory)
    // and an archive that never runs a library, as two more processes would have.
    struct FrontEnd {
      std::unique_ptr<Store> store;
      std::unique_ptr<FakeTapeLibrary> library = std::make_unique<FakeTapeLibrary>(kBlock);
      std::unique_ptr<Archive> archive;
    };
    std::vector<FrontEnd> fes(2);
    for (FrontEnd& fe : fes) {
      StoreOptions so;
      so.front_end = true;
      auto st = Store::Open(env.root, so);
      REQUIRE_MESSAGE(st.ok(), st.status().ToString());
      fe.store = std::move(*st);
      auto ar = Archive::Create(*fe.store, *fe.library, {}, /*serve=*/true, ArchiveRole::kFrontEnd);
      REQUIRE(ar.ok());
      fe.archive = std::move(*ar);
      CHECK(fe.store->fs().tmp_path() != env.store->fs().tmp_path());
    }
    // Front end 0 takes the request (Days 3), front end 1 and the owner join it.
    auto r0 = fes[0].archive->Restore("bkt", "a", 3);
    auto r1 = fes[1].archive->Restore("bkt", "a", 1);
    auto r2 = env.archive->Restore("bkt", "a", 1);
    REQUIRE(r0.ok());
    REQUIRE(r1.ok());
    REQUIRE(r2.ok());
    CHECK(*r0 == RestoreStart::kStarted);
    CHECK(*r1 == RestoreStart::kJoined);
    CHECK(*r2 == RestoreStart::kJoined);
    CHECK(fes[0].library->submitted().empty());  // a front end never submits
    CHECK(env.State("bkt", "a").restore_days == 3);
    // Every front end reads the same restore state from the shared catalog.
    for (FrontEnd& fe : fes) {
      auto head = fe.store->Head("bkt", "a");
      REQUIRE(head.ok());
      REQUIRE(head->archive.has_value());
      CHECK(head->archive->staging);
    }
    // The owner's request loop picks it up (woken through the FIFO, or its 1 s scan).
    for (int i = 0; i < 300 && env.library->pending() == 0; ++i) std::this_thread::sleep_for(10ms);
    REQUIRE(env.library->pending() == 1);
    auto r3 = fes[1].archive->Restore("bkt", "a", 1);
    REQUIRE(r3.ok());
    CHECK(*r3 == RestoreStart::kJoined);
    env.Finish();
    std::this_thread::sleep_for(1200ms);  // a scan after completion must not recall it again
    CHECK(env.library->submitted().size() == 1);
    ArchiveRecord ra = env.State("bkt", "a");
    CHECK(ra.state == ArchiveState::kPremigrated);
    CHECK_FALSE(ra.staging);
    CHECK(ra.expiry_ns > ra.restored_ns + int64_t{2} * 86400 * 1000000000);  // Days 3 applied
    CHECK(ra.restore_days == -1);
    CHECK(ReadFile(env.root + "/bkt/a") == a);
    auto head = fes[1].store->Head("bkt", "a");
    REQUIRE(head.ok());
    CHECK(head->etag == s3::Md5Hex(a));

    // A request recorded while no owner runs waits in the catalog and is resumed at its start.
    env.Close();
    auto rb = fes[0].archive->Restore("bkt", "b", std::nullopt);
    REQUIRE(rb.ok());
    CHECK(*rb == RestoreStart::kStarted);
    env.Open({});
    REQUIRE(env.library->pending() == 1);
    env.Finish();
    CHECK(ReadFile(env.root + "/bkt/b") == b);
    CHECK(env.State("bkt", "b").expiry_ns == 0);
  }

  TEST_CASE("front ends: a front end never creates, rebuilds or migrates the catalog") {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-fe.XXXXXX").string();
    const std::string dir = ::mkdtemp(tmpl.data());
    StoreOptions so;
    so.front_end = true;
    auto missing = Store::Open(dir + "/root", so);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().message().find("start the owning gateway") != std::string::npos);
    { REQUIRE(Store::Open(dir + "/root").ok()); }  // the owner creates it
    {
      auto ok = Store::Open(dir + "/root", so);
      CHECK_MESSAGE(ok.ok(), ok.status().ToString());
    }
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir + "/root/.reelfs-gateway/catalog.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version=1", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    auto old = Store::Open(dir + "/root", so);
    REQUIRE_FALSE(old.ok());
    CHECK(old.status().message().find("schema 1/") != std::string::npos);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  TEST_CASE("releaser: watermarks release the least recently restored first; admin release") {
    ArchiveOptions options;
    options.release_high_bytes = 25000;
    options.release_low_bytes = 12000;
    Env env(options);
    for (int i = 0; i < 4; ++i) env.Put("bkt", "k" + std::to_string(i), Content(10000, 'a' + i));
    ArchiveRunOptions run;
    run.release = true;
    REQUIRE(env.archive->Run(run).ok());
    for (int i = 0; i < 4; ++i) {
      REQUIRE(env.archive->Restore("bkt", "k" + std::to_string(i), std::nullopt).ok());
      env.Finish();
      // The releaser thread runs after each recall too; this makes the order deterministic.
      REQUIRE(env.archive->RunReleaser().ok());
      std::this_thread::sleep_for(2ms);  // distinct restore times
    }
    // After the third recall 30000 > 25000: k0 and k1 (oldest) go, 10000 <= 12000 remain; the
    // fourth brings it to 20000, under the high mark.
    auto bytes = env.store->catalog().RestoredBytes();
    REQUIRE(bytes.ok());
    CHECK(*bytes == 20000);
    CHECK(env.State("bkt", "k0").state == ArchiveState::kOffline);
    CHECK(env.State("bkt", "k1").state == ArchiveState::kOffline);
    CHECK(env.State("bkt", "k2").state == ArchiveState::kPremigrated);
    CHECK(env.State("bkt", "k3").state == ArchiveState::kPremigrated);
    auto n = env.archive->ReleaseAll("bkt", "");
    REQUIRE(n.ok());
    CHECK(*n == 2);
    CHECK(env.State("bkt", "k3").state == ArchiveState::kOffline);
  }

  TEST_CASE("personalities: the header matrix") {
    ObjectRecord online;
    online.storage_class = "STANDARD";
    ObjectRecord offline = online;
    offline.archive = ArchiveRecord{};
    offline.archive->state = ArchiveState::kOffline;
    ObjectRecord staging = offline;
    staging.archive->staging = true;
    ObjectRecord restored = offline;
    restored.archive->state = ArchiveState::kPremigrated;
    restored.archive->restored_ns = 1;
    restored.archive->expiry_ns = 1'700'006'400'000'000'000;  // 2023-11-15 00:00:00 UTC

    ArchiveOptions v;
    v.personality = Personality::kVersitygw;
    CHECK(ViewOf(online, v).storage_class == "STANDARD");
    CHECK(*ViewOf(online, v).restore_header ==
          "ongoing-request=\"false\", expiry-date=\"Fri, 2 Dec 2050 00:00:00 GMT\"");
    CHECK(ViewOf(offline, v).storage_class == "GLACIER");
    CHECK_FALSE(ViewOf(offline, v).restore_header.has_value());
    CHECK(*ViewOf(staging, v).restore_header == "ongoing-request=\"true\"");
    CHECK(ViewOf(restored, v).storage_class == "STANDARD");
    CHECK_FALSE(ViewOf(staging, v).restore_status.has_value());
    v.versitygw_restore_header = RestoreHeaderGeneration::k202603;
    CHECK(*ViewOf(online, v).restore_header == "ongoing-request=\"false\"");
    CHECK(*ViewOf(offline, v).restore_header == "ongoing-request=\"false\"");
    v.versitygw_restore_header = RestoreHeaderGeneration::kLegacy;
    CHECK(*ViewOf(online, v).restore_header == "false");
    CHECK(*ViewOf(offline, v).restore_header == "false");
    CHECK(*ViewOf(staging, v).restore_header == "true");
    // Every generation parses with the client's parser.
    for (auto gen : {RestoreHeaderGeneration::kCurrent, RestoreHeaderGeneration::k202603,
                     RestoreHeaderGeneration::kLegacy}) {
      v.versitygw_restore_header = gen;
      for (const ObjectRecord* r : {&online, &offline, &staging, &restored}) {
        if (auto h = ViewOf(*r, v).restore_header) CHECK(s3::ParseRestoreHeader(*h).ok());
      }
    }

    ArchiveOptions aws;
    aws.personality = Personality::kAws;
    CHECK(ViewOf(online, aws).storage_class.empty());  // STANDARD: no header
    CHECK_FALSE(ViewOf(online, aws).restore_header.has_value());
    CHECK(ViewOf(offline, aws).storage_class == "GLACIER");
    CHECK_FALSE(ViewOf(offline, aws).restore_header.has_value());
    CHECK(*ViewOf(staging, aws).restore_header == "ongoing-request=\"true\"");
    CHECK(ViewOf(restored, aws).storage_class == "GLACIER");
    CHECK(*ViewOf(restored, aws).restore_header ==
          "ongoing-request=\"false\", expiry-date=\"Wed, 15 Nov 2023 00:00:00 GMT\"");
    REQUIRE(ViewOf(restored, aws).restore_status.has_value());
    CHECK_FALSE(ViewOf(restored, aws).restore_status->ongoing);

    ArchiveOptions plain;
    CHECK(ViewOf(offline, plain).storage_class == "GLACIER");
    CHECK(ViewOf(restored, plain).storage_class.empty());
    ObjectRecord glacier_put = online;
    glacier_put.storage_class = "GLACIER";  // stored at PUT, still online: shown as given
    CHECK(ViewOf(glacier_put, plain).storage_class == "GLACIER");
    CHECK_FALSE(ViewOf(glacier_put, plain).offline);

    // Expiry: completion + days, rounded up to the next midnight UTC.
    const int64_t noon = 1'700'049'600'000'000'000;                // 2023-11-15 12:00:00 UTC
    CHECK(RestoreExpiryNs(noon, 1) == 1'700'179'200'000'000'000);  // 2023-11-17 00:00 UTC
  }

  TEST_CASE("versitygw over S3Service: headers, restore always 200, GET 403, listing") {
    ArchiveOptions options;
    options.personality = Personality::kVersitygw;
    options.hints = true;
    Env env(options);
    env.PutOnlineAndOffline();

    auto on = env.Send("HEAD", "/bkt/on", "");
    CHECK(on.status == 200);
    CHECK(*Env::Header(on, "x-amz-storage-class") == "STANDARD");
    CHECK(*Env::Header(on, "x-amz-restore") ==
          "ongoing-request=\"false\", expiry-date=\"Fri, 2 Dec 2050 00:00:00 GMT\"");
    CHECK(Env::Header(on, "x-reelfs-tape-cartridge") == nullptr);
    auto off = env.Send("HEAD", "/bkt/off", "");
    CHECK(off.status == 200);
    CHECK(off.stream_length == 5000);
    CHECK(*Env::Header(off, "x-amz-storage-class") == "GLACIER");
    CHECK(Env::Header(off, "x-amz-restore") == nullptr);
    CHECK(*Env::Header(off, "x-reelfs-tape-cartridge") == "RL0000L9");
    CHECK(*Env::Header(off, "x-reelfs-tape-block") == "0");
    CHECK(*Env::Header(off, "x-reelfs-tape-position") == "wrap=0,lpos=0");

    auto get = env.Send("GET", "/bkt/off", "");
    CHECK(get.status == 403);
    CHECK(Env::Code(get) == "InvalidObjectState");
    CHECK(s3::ParseErrorXml(get.body)->message ==
          "The operation is not valid for the current state of the object.");
    CHECK(env.Send("GET", "/bkt/off", "", {}, {{"range", "bytes=0-10"}}).status == 403);
    auto copy = env.Send("PUT", "/bkt/copy", "", {}, {{"x-amz-copy-source", "/bkt/off"}});
    CHECK(Env::Code(copy) == "InvalidObjectState");

    CHECK(Env::Code(env.Send("POST", "/bkt/off", "restore", "")) == "MalformedXML");
    CHECK(env.Send("POST", "/bkt/on", "restore", kRestoreBody).status == 200);
    CHECK(env.Send("POST", "/bkt/off", "restore", kRestoreBody).status == 200);
    CHECK(env.Send("POST", "/bkt/off", "restore", kRestoreBody).status == 200);  // joins
    CHECK(env.library->pending() == 1);
    auto staging = env.Send("HEAD", "/bkt/off", "");
    CHECK(*Env::Header(staging, "x-amz-restore") == "ongoing-request=\"true\"");
    CHECK(*Env::Header(staging, "x-amz-storage-class") == "GLACIER");

    auto list = env.Send(
        "GET", "/bkt", "list-type=2", {},
        {{"x-amz-optional-object-attributes", "RestoreStatus"}, {"x-reelfs-tape-hints", "1"}});
    CHECK(list.status == 200);
    CHECK(list.body.find("<StorageClass>GLACIER</StorageClass>") != std::string::npos);
    CHECK(list.body.find("<StorageClass>STANDARD</StorageClass>") != std::string::npos);
    CHECK(list.body.find("RestoreStatus") == std::string::npos);
    CHECK(list.body.find("<ReelfsTape><Cartridge>RL0000L9</Cartridge><Block>0</Block>") !=
          std::string::npos);
    auto parsed = s3::ParseListObjectsV2(list.body);  // extra elements are ignored by clients
    REQUIRE(parsed.ok());
    CHECK(parsed->objects.size() == 2);

    env.Finish();
    auto back = env.Send("GET", "/bkt/off", "");
    CHECK(back.status == 200);
    CHECK(back.stream_length == 5000);
    auto online_again = env.Send("HEAD", "/bkt/off", "");
    CHECK(*Env::Header(online_again, "x-amz-storage-class") == "STANDARD");
  }

  TEST_CASE("aws over S3Service: 202/409/200, 403 on STANDARD, 503 Expedited, RestoreStatus") {
    ArchiveOptions options;
    options.personality = Personality::kAws;
    options.expedited_unavailable = true;
    Env env(options);
    env.PutOnlineAndOffline();

    auto on = env.Send("HEAD", "/bkt/on", "");
    CHECK(Env::Header(on, "x-amz-storage-class") == nullptr);
    CHECK(Env::Header(on, "x-amz-restore") == nullptr);
    CHECK(Env::Code(env.Send("POST", "/bkt/on", "restore", kRestoreBody)) == "InvalidObjectState");
    auto expedited = env.Send("POST", "/bkt/off", "restore",
                              "<RestoreRequest><Days>1</Days><GlacierJobParameters><Tier>"
                              "Expedited</Tier></GlacierJobParameters></RestoreRequest>");
    CHECK(expedited.status == 503);
    CHECK(Env::Code(expedited) == "GlacierExpeditedRetrievalNotAvailable");
    CHECK(env.Send("POST", "/bkt/off", "restore", kRestoreBody).status == 202);
    auto again = env.Send("POST", "/bkt/off", "restore", kRestoreBody);
    CHECK(again.status == 409);
    CHECK(Env::Code(again) == "RestoreAlreadyInProgress");
    auto list = env.Send("GET", "/bkt", "list-type=2", {},
                         {{"x-amz-optional-object-attributes", "RestoreStatus"}});
    CHECK(list.body.find("<IsRestoreInProgress>true</IsRestoreInProgress>") != std::string::npos);
    auto plain_list = env.Send("GET", "/bkt", "list-type=2");
    CHECK(plain_list.body.find("RestoreStatus") == std::string::npos);
    CHECK(plain_list.body.find("<ReelfsTape>") == std::string::npos);  // hints off
    CHECK(Env::Code(env.Send("GET", "/bkt/off", "")) == "InvalidObjectState");
    CHECK(s3::ParseErrorXml(env.Send("GET", "/bkt/off", "").body)->message ==
          "The action is not valid for the object's storage class");

    env.Finish();
    auto head = env.Send("HEAD", "/bkt/off", "");
    CHECK(*Env::Header(head, "x-amz-storage-class") == "GLACIER");
    auto info = s3::ParseRestoreHeader(*Env::Header(head, "x-amz-restore"));
    REQUIRE(info.ok());
    CHECK_FALSE(info->ongoing);
    REQUIRE(info->expiry.has_value());
    CHECK_FALSE(info->expiry_is_placeholder);
    CHECK(env.Send("POST", "/bkt/off", "restore", kRestoreBody).status == 200);  // moves expiry
    CHECK(env.Send("GET", "/bkt/off", "").status == 200);
  }

  TEST_CASE("admin endpoints and HTTP faults over S3Service") {
    Env env;
    env.Put("bkt", "x", Content(3000, 'x'));
    auto r = env.Send("POST", "/_reelfs/admin/archive", "bucket=bkt&cartridges=1&release=true");
    CHECK(r.status == 200);
    CHECK(r.body.find("\"archived\":1") != std::string::npos);
    CHECK(env.State("bkt", "x").state == ArchiveState::kOffline);
    auto m = env.Send("GET", "/_reelfs/admin/metrics", "");
    CHECK(m.status == 200);
    CHECK(m.body.find("\"tape\":{\"fake\":true}") != std::string::npos);
    CHECK(m.body.find("\"archived_objects\":1") != std::string::npos);
    CHECK(env.Send("GET", "/_reelfs/admin/timeline.svg", "").body.starts_with("<svg"));
    CHECK(env.Send("GET", "/_reelfs/admin/archive", "").status == 405);
    CHECK(env.Send("GET", "/_reelfs/admin/nope", "").status == 501);
    CHECK(env.Send("POST", "/_reelfs/admin/archive", "order=sideways").status == 400);
    REQUIRE(env.archive->Restore("bkt", "x", std::nullopt).ok());
    env.Finish();
    auto rel = env.Send("POST", "/_reelfs/admin/release", "bucket=bkt");
    CHECK(rel.body == "{\"released\":1}");

    FaultScenario scenario;
    HttpFault slow;
    slow.op = "HeadObject";
    slow.nth = 2;
    slow.error = "SlowDown";
    scenario.http.push_back(slow);
    HttpFault cut;
    cut.op = "GetObject";
    cut.every = 1;
    cut.reset_after = 10;
    scenario.http.push_back(cut);
    env.faults = std::make_unique<FaultInjector>(scenario);
    env.service.reset();
    ServiceOptions so;
    so.access_key = "AK";
    so.secret_key = "SK";
    env.service = std::make_unique<S3Service>(*env.store, so, env.archive.get(), env.faults.get());
    env.Put("bkt", "y", Content(100, 'y'));
    CHECK(env.Send("HEAD", "/bkt/y", "").status == 200);
    auto slowdown = env.Send("HEAD", "/bkt/y", "");
    CHECK(slowdown.status == 503);
    CHECK(env.Send("HEAD", "/bkt/y", "").status == 200);
    auto get = env.Send("GET", "/bkt/y", "");
    REQUIRE(get.stream);
    CHECK(get.stream->file_range().fd < 0);  // no sendfile: the cut must apply
    std::string buf(1000, '\0');
    auto n = get.stream->Read(std::span<char>(buf.data(), buf.size()));
    REQUIRE(n.ok());
    CHECK(*n == 10);
    CHECK_FALSE(get.stream->Read(std::span<char>(buf.data(), buf.size())).ok());
  }

  TEST_CASE("library faults are forwarded at their simulated time") {
    Env env;
    LibraryFault now;
    now.fault.kind = tape::Fault::Kind::kDriveDown;
    now.fault.target = "drive0";
    LibraryFault later;
    later.at = std::chrono::duration<double>(100);
    later.fault.kind = tape::Fault::Kind::kMediaError;
    later.fault.target = "RL0000L9";
    env.archive->ScheduleFaults({now, later});
    CHECK(env.library->injected().size() == 1);
    env.library->set_now(150);
    for (int i = 0; i < 200 && env.library->injected().size() < 2; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    REQUIRE(env.library->injected().size() == 2);
    CHECK(env.library->injected()[1].target == "RL0000L9");
  }
}

}  // namespace reelfs::gateway

// The archive policy (gateway/archive/policy_batches.h, policy.h) with a fake clock and a fake
// tape library (tests/fakes/fake_tape_library.h): which objects are due, batching by bytes and
// objects in key or size order, cartridge selection, the engine's scans (archived on the
// cartridge image, still readable), a PUT racing the tape write (nothing stale committed, the
// new content archived by the next scan), a failed write (nothing committed), release_after
// (restored copies exempt), and a clean stop of the engine's thread.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "gateway/archive/archive.h"
#include "gateway/archive/policy.h"
#include "gateway/archive/policy_batches.h"
#include "s3/protocol/crypto.h"
#include "tests/fakes/fake_tape_library.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;
using testing::FakeTapeLibrary;
using namespace std::chrono_literals;

constexpr uint64_t kBlock = 4096;
constexpr int64_t kSecond = 1'000'000'000;

ObjectRecord Rec(std::string key, uint64_t size, int64_t mtime_ns = 0) {
  ObjectRecord r;
  r.key = std::move(key);
  r.size = size;
  r.mtime_ns = mtime_ns;
  return r;
}

std::string Content(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 13 % 251));
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("policy: due objects are under the prefix, non-empty, unarchived and old enough") {
  ArchiveSet set;
  set.prefix = "ckpt/";
  set.after = 30s;
  const int64_t now = 1000 * kSecond;
  CHECK(DueForArchive(set, Rec("ckpt/a", 10, now - 30 * kSecond), now));
  CHECK_FALSE(DueForArchive(set, Rec("ckpt/a", 10, now - 29 * kSecond), now));  // too young
  CHECK_FALSE(DueForArchive(set, Rec("ckpt/a", 10, now + kSecond), now));       // future mtime
  CHECK_FALSE(DueForArchive(set, Rec("other/a", 10, 0), now));
  CHECK_FALSE(DueForArchive(set, Rec("ckpt/empty", 0, 0), now));
  CHECK_FALSE(DueForArchive(set, Rec("ckpt/dir/", 0, 0), now));
  ObjectRecord archived = Rec("ckpt/b", 10, 0);
  archived.archive = ArchiveRecord{};
  CHECK_FALSE(DueForArchive(set, archived, now));
  set.after = 0s;
  CHECK(DueForArchive(set, Rec("ckpt/a", 10, now), now));
}

TEST_CASE("policy: batches are cut by bytes and objects, in key or size order") {
  ArchiveSet set;
  set.batch_bytes = 100;
  set.batch_objects = 3;
  std::vector<ObjectRecord> due = {Rec("d", 10),  Rec("a", 60), Rec("c", 30), Rec("b", 50),
                                   Rec("e", 250), Rec("f", 1),  Rec("g", 1),  Rec("h", 1)};
  auto keys = [](const std::vector<std::vector<ObjectRecord>>& batches) {
    std::vector<std::string> out;
    for (const auto& b : batches) {
      std::string s;
      for (const auto& r : b) s += r.key;
      out.push_back(s);
    }
    return out;
  };
  // Key order: a(60) | b(50) c(30) d(10) would be 90 but 3 objects | ...
  CHECK(keys(MakeBatches(set, due)) == std::vector<std::string>{"a", "bcd", "e", "fgh"});
  set.order_by_size = true;  // largest first, ties by key
  CHECK(keys(MakeBatches(set, due)) == std::vector<std::string>{"e", "a", "bcd", "fgh"});
  set.batch_objects = 1000;
  set.batch_bytes = 1ull << 30;
  CHECK(keys(MakeBatches(set, due)).size() == 1);
  CHECK(MakeBatches(set, {}).empty());
  CHECK(BatchBlocks({Rec("a", 1), Rec("b", kBlock), Rec("c", kBlock + 1)}, kBlock) == 4);
}

TEST_CASE("policy: a batch goes whole to the first of the set's cartridges with room") {
  ArchiveSet set;
  set.name = "s";
  set.cartridges = {"A", "B"};
  CHECK(*PickCartridge(set, {}, 10, 100) == "A");
  CHECK(*PickCartridge(set, {{"A", 90}}, 10, 100) == "A");
  CHECK(*PickCartridge(set, {{"A", 91}}, 10, 100) == "B");
  auto none = PickCartridge(set, {{"A", 91}, {"B", 100}}, 10, 100);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::kResourceExhausted);
  CHECK(std::string(none.status().message()).find("archive set 's'") != std::string::npos);
}

// A store, the fake library, an archive without its own engine, and an engine on a fake clock
// (no thread: the test calls ScanOnce).
struct Env {
  explicit Env(ArchiveSet set) {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-policy.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    auto s = Store::Open(dir + "/root");
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    store = std::move(*s);
    REQUIRE(store->CreateBucket("bkt").ok());
    library = std::make_unique<FakeTapeLibrary>(kBlock);
    auto a = Archive::Create(*store, *library, ArchiveOptions{}, /*serve=*/true);
    REQUIRE_MESSAGE(a.ok(), a.status().ToString());
    archive = std::move(*a);
    options.sets.push_back(std::move(set));
    policy = std::make_unique<ArchivePolicy>(*archive, *store, options,
                                             [this] { return NowNs() + offset.load(); });
  }
  ~Env() {
    policy.reset();
    archive.reset();
    library.reset();
    store.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void Put(const std::string& key, const std::string& body) {
    auto tmp = store->fs().CreateTmp("test");
    REQUIRE(tmp.ok());
    REQUIRE(tmp->Write(body).ok());
    REQUIRE(store->Put("bkt", key, *tmp, s3::Md5Hex(body), PutOptions{}).ok());
  }
  std::optional<ArchiveRecord> State(const std::string& key) {
    auto a = store->catalog().GetArchive("bkt", key);
    REQUIRE(a.ok());
    return *a;
  }
  // The extent's bytes from the cartridge image.
  std::string OnTape(const ArchiveRecord& a) {
    std::string image = ReadFile(dir + "/root/.reelfs-gateway/tapes/" + a.cartridge + ".img");
    REQUIRE(image.size() >= a.start_block * kBlock + a.bytes);
    return image.substr(a.start_block * kBlock, a.bytes);
  }
  PolicyScanReport Scan() {
    auto r = policy->ScanOnce();
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    return *r;
  }

  std::string dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<FakeTapeLibrary> library;
  std::unique_ptr<Archive> archive;
  ArchivePolicyOptions options;
  std::unique_ptr<ArchivePolicy> policy;
  std::atomic<int64_t> offset{0};  // the fake clock: real time + offset
};

ArchiveSet CkptSet() {
  ArchiveSet set;
  set.name = "ckpt";
  set.bucket = "bkt";
  set.prefix = "ckpt/";
  set.after = 30s;
  set.batch_objects = 2;
  set.cartridges = {"RLP000L9", "RLP001L9"};
  return set;
}

TEST_CASE("policy engine: due objects are written in batches, stay readable, premigrated") {
  Env env(CkptSet());
  const std::string a = Content(10000, 'a'), b = Content(5000, 'b'), c = Content(1, 'c');
  env.Put("ckpt/a", a);
  env.Put("ckpt/b", b);
  env.Put("ckpt/c", c);
  env.Put("other/x", Content(100, 'x'));

  PolicyScanReport r = env.Scan();  // nothing changed 30 s ago yet
  CHECK(r.due == 0);
  CHECK(env.library->writes().empty());

  env.offset = 31 * kSecond;
  r = env.Scan();
  CHECK(r.due == 3);
  CHECK(r.batches == 2);  // batch_objects: 2
  CHECK(r.archived == 3);
  CHECK(r.bytes == a.size() + b.size() + c.size());
  CHECK(r.errors == 0);
  // One library write per batch, each covering its objects' blocks, appended on RLP000L9.
  auto writes = env.library->writes();
  REQUIRE(writes.size() == 2);
  CHECK(writes[0].extent.cartridge == "RLP000L9");
  CHECK(writes[0].extent.start_block == 0);
  CHECK(writes[0].extent.bytes == (3 + 2) * kBlock);  // a: 3 blocks, b: 2
  CHECK(writes[1].extent.start_block == 5);
  CHECK(writes[1].extent.bytes == kBlock);
  for (const auto& [key, body] : {std::pair{"ckpt/a", a}, {"ckpt/b", b}, {"ckpt/c", c}}) {
    auto st = env.State(key);
    REQUIRE(st.has_value());
    CHECK(st->state == ArchiveState::kPremigrated);
    CHECK(env.OnTape(*st) == body);
    CHECK(ReadFile(env.dir + "/root/bkt/" + key) == body);  // the disk copy stays
  }
  CHECK_FALSE(env.State("other/x").has_value());
  // Nothing left to do; the counters add up.
  r = env.Scan();
  CHECK(r.due == 0);
  Json m = env.policy->MetricsDocument();
  CHECK(m["scans"] == 3);
  CHECK(m["archived_objects"] == 3);
  CHECK(m["batches"] == 2);
  CHECK(env.archive->MetricsDocument()["tape_writes"] == 2);
}

TEST_CASE("policy engine: a PUT racing the tape write never commits stale bytes") {
  Env env(CkptSet());
  const std::string old_body = Content(9000, 'o'), new_body = Content(7000, 'n');
  env.Put("ckpt/x", old_body);
  env.offset = 31 * kSecond;
  bool raced = false;
  env.library->set_on_write([&] {
    if (raced) return;
    raced = true;
    env.Put("ckpt/x", new_body);  // lands while the drive writes the old bytes
  });
  PolicyScanReport r = env.Scan();
  CHECK(raced);
  CHECK(r.archived == 0);
  CHECK(r.skipped == 1);
  CHECK_FALSE(env.State("ckpt/x").has_value());  // the new content has no tape copy
  CHECK(ReadFile(env.dir + "/root/bkt/ckpt/x") == new_body);

  // Not due until it is `after` old itself, then archived with the new bytes.
  env.library->set_on_write(nullptr);
  env.offset = 0;
  CHECK(env.Scan().due == 0);
  env.offset = 31 * kSecond;
  r = env.Scan();
  CHECK(r.archived == 1);
  auto st = env.State("ckpt/x");
  REQUIRE(st.has_value());
  CHECK(st->etag == s3::Md5Hex(new_body));
  CHECK(env.OnTape(*st) == new_body);
}

TEST_CASE("policy engine: a DELETE racing the tape write leaves the key deleted") {
  Env env(CkptSet());
  env.Put("ckpt/gone", Content(3000, 'g'));
  env.offset = 31 * kSecond;
  env.library->set_on_write([&] { REQUIRE(env.store->Delete("bkt", "ckpt/gone").ok()); });
  PolicyScanReport r = env.Scan();
  CHECK(r.archived == 0);
  CHECK(r.skipped == 1);
  CHECK_FALSE(env.store->Head("bkt", "ckpt/gone").ok());
  CHECK_FALSE(env.State("ckpt/gone").has_value());
}

TEST_CASE("policy engine: a failed tape write commits nothing; the next scan retries") {
  Env env(CkptSet());
  const std::string body = Content(6000, 'f');
  env.Put("ckpt/f", body);
  env.offset = 31 * kSecond;
  env.library->set_write_outcome(tape::RecallOutcome::kMediaError);
  PolicyScanReport r = env.Scan();
  CHECK(r.archived == 0);
  CHECK(r.errors == 1);
  CHECK_FALSE(env.State("ckpt/f").has_value());
  CHECK(env.archive->MetricsDocument()["tape_writes_failed"] == 1);
  env.library->set_write_outcome(tape::RecallOutcome::kOk);
  r = env.Scan();
  CHECK(r.archived == 1);
  auto st = env.State("ckpt/f");
  REQUIRE(st.has_value());
  CHECK(st->start_block == 2);  // the failed write's blocks stay spent
  CHECK(env.OnTape(*st) == body);
}

TEST_CASE("policy engine: release_after takes archived copies offline, not restored ones") {
  ArchiveSet set = CkptSet();
  set.release_after = 60s;
  Env env(set);
  env.Put("ckpt/r", Content(5000, 'r'));
  env.Put("ckpt/s", Content(5000, 's'));
  env.offset = 31 * kSecond;
  CHECK(env.Scan().archived == 2);
  CHECK(env.Scan().released == 0);  // archived just now
  // ckpt/s was restored (a client staged it): the releaser's rules apply to it, not this one.
  REQUIRE(env.store
              ->UpdateArchive("bkt", "ckpt/s",
                              [](ArchiveRecord& a) {
                                a.restored_ns = NowNs();
                                return Status::Ok();
                              })
              .ok());
  env.offset = 100 * kSecond;
  PolicyScanReport r = env.Scan();
  CHECK(r.released == 1);
  CHECK(env.State("ckpt/r")->state == ArchiveState::kOffline);
  CHECK(env.State("ckpt/s")->state == ArchiveState::kPremigrated);
  REQUIRE(std::filesystem::exists(env.dir + "/root/bkt/ckpt/r"));
  CHECK(ReadFile(env.dir + "/root/bkt/ckpt/r").empty());  // the placeholder
  CHECK(env.Scan().released == 0);
}

TEST_CASE("policy engine: a set whose cartridges are full reports it and writes nothing") {
  ArchiveSet set = CkptSet();
  set.cartridges = {"RLF000L9"};
  Env env(set);
  REQUIRE(env.store->catalog().PutCartridge({"RLF000L9", env.library->CapacityBlocks()}).ok());
  env.Put("ckpt/big", Content(5000, 'z'));
  env.offset = 31 * kSecond;
  PolicyScanReport r = env.Scan();
  CHECK(r.due == 1);
  CHECK(r.archived == 0);
  CHECK(r.errors == 1);
  CHECK(env.library->writes().empty());
}

TEST_CASE("policy engine: Stop joins the thread; nothing runs after it") {
  ArchiveSet set = CkptSet();
  set.after = 0s;
  Env env(set);
  env.Put("ckpt/t", Content(100, 't'));
  ArchivePolicyOptions options = env.options;
  options.scan_interval = 100ms;
  ArchivePolicy engine(*env.archive, *env.store, options, [] { return NowNs(); });
  engine.Start();
  for (int i = 0; i < 200 && !env.State("ckpt/t").has_value(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(env.State("ckpt/t").has_value());  // the thread scanned and archived it
  engine.Stop();
  const uint64_t scans = engine.MetricsDocument()["scans"].get<uint64_t>();
  env.Put("ckpt/u", Content(100, 'u'));
  std::this_thread::sleep_for(300ms);  // three intervals: a running thread would have scanned
  CHECK(engine.MetricsDocument()["scans"].get<uint64_t>() == scans);
  CHECK_FALSE(env.State("ckpt/u").has_value());
  engine.Stop();  // idempotent
  auto r = engine.ScanOnce();
  CHECK(r.status().code() == StatusCode::kCancelled);
}

}  // namespace
}  // namespace reelfs::gateway

// Integration: the archive behind a real reelfs-gateway process, driven by the reelfs S3 client,
// with the real tape library on a x1000 clock, for both personalities: `reelfs-gateway archive`
// (and its refusal while a gateway holds the root), HEAD/list/GET of offline objects, a restore
// then a GET verified by SHA-256, a recall from a damaged cartridge image that fails cleanly and
// loses nothing else, and a fault scenario (503 SlowDown, a GET cut mid-body, a media error).
// Skips (77) when the gateway binary is absent.
#define DOCTEST_CONFIG_IMPLEMENT
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "common/log.h"
#include "s3/await.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/crypto.h"
#include "tests/fakes/gateway_process.h"

namespace fs = std::filesystem;
using namespace reelfs;
using namespace reelfs::s3;
using namespace std::chrono_literals;

namespace {

const char* g_bin = nullptr;
constexpr const char* kBucket = "archive";

std::vector<std::byte> Bytes(size_t n, uint64_t seed) {
  std::vector<std::byte> v(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = std::byte(x & 0xff);
  }
  return v;
}

std::string Sha(std::span<const std::byte> data) {
  Digest d(Digest::Algorithm::kSha256);
  d.Update(data);
  return HexEncode(d.Finish());
}

// A gateway with its own temp root and config, and a client for it.
struct World {
  explicit World(const std::string& config_yaml) {
    char tmpl[] = "/tmp/reelfs-archive-itest-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    root = dir + "/root";
    config = dir + "/gateway.yaml";
    fs::create_directories(root);
    std::ofstream(config) << config_yaml;
    gateway = std::make_unique<testing::GatewayProcess>(testing::GatewayConfig{
        .binary = g_bin, .root = root, .extra_args = {"--config", config, "--log-level", "info"}});
    Status st = gateway->Start();
    REQUIRE_MESSAGE(st.ok(), st.ToString());
    ClientOptions o;
    o.endpoint = gateway->endpoint();
    o.credentials = {gateway->config().access_key, gateway->config().secret_key, ""};
    o.retry = {.max_attempts = 6, .base = 20ms, .cap = 200ms};
    auto c = S3Client::Create(o);
    REQUIRE_MESSAGE(c.ok(), c.status().ToString());
    client = std::move(*c);
    Status b = AwaitStatus([&](auto cb) { client->CreateBucket(kBucket, cb); });
    REQUIRE_MESSAGE(b.ok(), b.ToString());
  }
  ~World() {
    client.reset();
    gateway.reset();
    std::error_code ec;
    if (keep) {
      MESSAGE("kept " << dir);
    } else {
      fs::remove_all(dir, ec);
    }
  }

  std::string Put(const std::string& key, const std::vector<std::byte>& body) {
    PutObjectRequest req{kBucket, key, body};
    auto r = Await<std::string>([&](auto cb) { client->PutObject(req, cb); });
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    return Sha(body);
  }
  Result<ObjectInfo> Head(const std::string& key) {
    return Await<ObjectInfo>([&](auto cb) { client->HeadObject({kBucket, key}, cb); });
  }
  Result<std::string> GetSha(const std::string& key) {
    Digest digest(Digest::Algorithm::kSha256);
    GetObjectRequest req;
    req.bucket = kBucket;
    req.key = key;
    req.sink = [&](std::span<const std::byte> chunk) {
      digest.Update(chunk);
      return Status::Ok();
    };
    auto r = Await<GetObjectResult>([&](auto cb) { client->GetObject(req, cb); });
    if (!r.ok()) return r.status();
    return HexEncode(digest.Finish());
  }
  Result<RestoreOutcome> Restore(const std::string& key) {
    return Await<RestoreOutcome>([&](auto cb) { client->RestoreObject({kBucket, key, 1}, cb); });
  }
  // `reelfs-gateway archive ...`; returns its exit status, output in *out.
  int ArchiveCommand(const std::string& args, std::string* out) {
    const std::string log = dir + "/archive.out";
    const std::string cmd = std::string(g_bin) + " archive --root " + root + " --config " + config +
                            " " + args + " >" + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    *out = std::string(std::istreambuf_iterator<char>(in), {});
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  // Stops the gateway, archives with `args`, starts it again.
  void ArchiveOffline(const std::string& args) {
    gateway->Terminate();
    std::string out;
    int rc = ArchiveCommand(args, &out);
    REQUIRE_MESSAGE(rc == 0, out);
    MESSAGE("archive: " << out);
    Status st = gateway->Start();
    REQUIRE_MESSAGE(st.ok(), st.ToString());
  }
  // Polls HEAD until no restore is running (or `deadline`); returns the last HEAD.
  ObjectInfo WaitNotStaging(const std::string& key, std::chrono::milliseconds deadline = 20s) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (true) {
      auto h = Head(key);
      REQUIRE_MESSAGE(h.ok(), h.status().ToString());
      const bool staging = h->restore.has_value() && h->restore->ongoing;
      if (!staging || std::chrono::steady_clock::now() > until) return *h;
      std::this_thread::sleep_for(20ms);
    }
  }

  std::string dir, root, config;
  std::unique_ptr<testing::GatewayProcess> gateway;
  std::unique_ptr<S3Client> client;
  bool keep = false;
};

std::string Config(const std::string& personality, const std::string& extra = "") {
  return "archive:\n  personality: " + personality +
         "\n  hints: true\ntape:\n  drives: 2\n  speedup: 1000\n  mode: scaled\n" + extra;
}

void ArchiveRestoreScenario(const std::string& personality) {
  World w(Config(personality));
  const auto one = Bytes((1 << 20) + 3, 1), two = Bytes(300 << 10, 2), three = Bytes(64 << 10, 3);
  const std::string sha_one = w.Put("a/one", one);
  w.Put("a/two", two);
  const std::string sha_three = w.Put("b/three", three);

  // The archive subcommand refuses a root a gateway holds.
  std::string out;
  CHECK(w.ArchiveCommand("--cartridges 2", &out) != 0);
  CHECK_MESSAGE(out.find("another reelfs-gateway holds this root") != std::string::npos, out);
  // Striped over 2: a/one -> RL0000L9, a/two -> RL0001L9, b/three -> RL0000L9.
  w.ArchiveOffline("--cartridges 2 --order striped --release");

  auto head = w.Head("a/one");
  REQUIRE_MESSAGE(head.ok(), head.status().ToString());
  CHECK(head->size == one.size());
  CHECK(head->storage_class == "GLACIER");
  CHECK_FALSE(head->restore.has_value());  // offline, not staging: header omitted (both)
  CHECK(head->hints["x-reelfs-tape-cartridge"] == "RL0000L9");
  CHECK(head->hints["x-reelfs-tape-block"] == "0");
  CHECK(head->hints.count("x-reelfs-tape-position") == 1);
  CHECK(w.Head("a/two")->hints["x-reelfs-tape-cartridge"] == "RL0001L9");

  auto get = w.GetSha("a/one");
  REQUIRE_FALSE(get.ok());
  CHECK(get.status().detail().s3_code == "InvalidObjectState");
  CHECK(get.status().code() == StatusCode::kFailedPrecondition);
  auto ranged = Await<GetObjectResult>([&](auto cb) {
    std::vector<std::byte> buf(100);
    GetObjectRequest req;
    req.bucket = kBucket;
    req.key = "a/one";
    req.range = ByteRange{10, 100};
    req.buffer = buf;
    w.client->GetObject(req, cb);
  });
  CHECK(ranged.status().detail().s3_code == "InvalidObjectState");
  // UploadPartCopy of an offline source: the same answer, with the reason the mount acts on.
  auto upload = Await<std::string>([&](auto cb) {
    w.client->CreateMultipartUpload({kBucket, "a/one-copy"}, cb);
  });
  REQUIRE_MESSAGE(upload.ok(), upload.status().ToString());
  UploadPartCopyRequest part_copy;
  part_copy.source_bucket = kBucket;
  part_copy.source_key = "a/one";
  part_copy.bucket = kBucket;
  part_copy.key = "a/one-copy";
  part_copy.upload_id = *upload;
  part_copy.part_number = 1;
  auto copied = Await<std::string>([&](auto cb) { w.client->UploadPartCopy(part_copy, cb); });
  CHECK(copied.status().detail().s3_code == "InvalidObjectState");
  CHECK(copied.status().reason() == StatusReason::kArchived);
  CHECK(AwaitStatus([&](auto cb) {
          w.client->AbortMultipartUpload({kBucket, "a/one-copy", *upload}, cb);
        }).ok());

  ListObjectsRequest lr;
  lr.bucket = kBucket;
  lr.fetch_restore_status = true;
  auto page = Await<ListObjectsPage>([&](auto cb) { w.client->ListObjects(lr, cb); });
  REQUIRE_MESSAGE(page.ok(), page.status().ToString());
  REQUIRE(page->objects.size() == 3);
  for (const auto& o : page->objects) CHECK(o.storage_class == "GLACIER");

  // Restore, then GET with the bytes verified.
  auto r1 = w.Restore("a/one");
  REQUIRE_MESSAGE(r1.ok(), r1.status().ToString());
  auto r2 = w.Restore("a/one");
  REQUIRE_MESSAGE(r2.ok(), r2.status().ToString());
  if (personality == "aws") {
    CHECK(*r1 == RestoreOutcome::kAccepted);
    // 409 while it runs (a recall takes tens of simulated seconds: tens of ms here).
    CHECK_MESSAGE((*r2 == RestoreOutcome::kAlreadyInProgress || *r2 == RestoreOutcome::kOk),
                  static_cast<int>(*r2));
  } else {
    CHECK(*r1 == RestoreOutcome::kOk);  // versitygw: always 200
    CHECK(*r2 == RestoreOutcome::kOk);
  }
  ObjectInfo restored = w.WaitNotStaging("a/one");
  REQUIRE(restored.restore.has_value());
  CHECK_FALSE(restored.restore->ongoing);
  if (personality == "aws") {
    CHECK(restored.storage_class == "GLACIER");
    REQUIRE(restored.restore->expiry.has_value());
    CHECK_FALSE(restored.restore->expiry_is_placeholder);
    CHECK(*restored.restore->expiry > std::chrono::system_clock::now());
  } else {
    CHECK(restored.storage_class == "STANDARD");
    CHECK(restored.restore->expiry_is_placeholder);  // versitygw's 2050
  }
  auto sha = w.GetSha("a/one");
  REQUIRE_MESSAGE(sha.ok(), sha.status().ToString());
  CHECK(*sha == sha_one);

  // A damaged cartridge image: the recall fails cleanly, the object stays offline, and the other
  // cartridge's objects (and the one restored above) are untouched.
  fs::resize_file(w.root + "/.reelfs-gateway/tapes/RL0001L9.img", 4096);
  REQUIRE(w.Restore("a/two").ok());
  std::this_thread::sleep_for(50ms);
  ObjectInfo failed = w.WaitNotStaging("a/two");
  CHECK(failed.storage_class == "GLACIER");
  CHECK_FALSE(failed.restore.has_value());
  CHECK(w.GetSha("a/two").status().detail().s3_code == "InvalidObjectState");
  REQUIRE(w.Restore("b/three").ok());
  ObjectInfo three_back = w.WaitNotStaging("b/three");
  CHECK(three_back.restore.has_value());
  auto sha3 = w.GetSha("b/three");
  REQUIRE_MESSAGE(sha3.ok(), sha3.status().ToString());
  CHECK(*sha3 == sha_three);
  auto again = w.GetSha("a/one");
  REQUIRE(again.ok());
  CHECK(*again == sha_one);
}

}  // namespace

TEST_CASE("versitygw personality: archive, HEAD/list/GET offline, restore, damaged cartridge") {
  ArchiveRestoreScenario("versitygw");
}

TEST_CASE("aws personality: archive, HEAD/list/GET offline, restore, damaged cartridge") {
  ArchiveRestoreScenario("aws");
}

TEST_CASE("fault scenario: 503 SlowDown retried, GET cut mid-body resumed, media error") {
  World w(Config("versitygw",
                 "faults:\n"
                 "  http:\n"
                 "    - op: HeadObject\n      nth: 1\n      error: SlowDown\n"
                 "    - op: GetObject\n      nth: 1\n      reset_after: 100KiB\n"
                 "  library:\n"
                 "    - kind: media_error\n      target: RL0001L9\n"));
  const auto big = Bytes(2 << 20, 9), small = Bytes(10000, 10);
  const std::string sha_big = w.Put("x/big", big);
  w.Put("x/small", small);
  const uint64_t retries = w.client->counters().retries;
  auto head = w.Head("x/big");  // the first HEAD draws 503 SlowDown; the client retries
  REQUIRE_MESSAGE(head.ok(), head.status().ToString());
  CHECK(w.client->counters().retries > retries);
  auto sha = w.GetSha("x/big");  // the first GET is cut after 100 KiB; the client resumes
  REQUIRE_MESSAGE(sha.ok(), sha.status().ToString());
  CHECK(*sha == sha_big);

  // Cartridge RL0001L9 has a media error from the start: x/small (striped onto it) fails.
  w.ArchiveOffline("--cartridges 2 --order striped --release");
  REQUIRE(w.Restore("x/small").ok());
  REQUIRE(w.Restore("x/big").ok());
  std::this_thread::sleep_for(50ms);
  ObjectInfo small_after = w.WaitNotStaging("x/small");
  CHECK(small_after.storage_class == "GLACIER");
  CHECK_FALSE(small_after.restore.has_value());
  CHECK(w.GetSha("x/small").status().detail().s3_code == "InvalidObjectState");
  ObjectInfo big_after = w.WaitNotStaging("x/big");
  CHECK(big_after.storage_class == "STANDARD");
  auto back = w.GetSha("x/big");
  REQUIRE_MESSAGE(back.ok(), back.status().ToString());
  CHECK(*back == sha_big);
}

int main(int argc, char** argv) {
  if (const char* spec = std::getenv("REELFS_LOG")) ConfigureLogging(spec).IgnoreError();
  g_bin = testing::GatewayBinaryOrSkip();
  if (g_bin == nullptr) return 77;
  doctest::Context context(argc, argv);
  return context.run();
}

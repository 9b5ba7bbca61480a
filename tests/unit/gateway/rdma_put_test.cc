// The device-free parts of the gateway's RDMA PUT (docs/protocols/rdma-put.md "Gateway"): the
// x-amz-rdma-target parser, the session table's expiry and eviction with a fake clock, and how
// S3Service routes PUTs carrying x-amz-rdma-token (PREPARE planning, session PUTs, the store step
// that runs after the RDMA READ) through a fake RdmaHook. The RDMA READ itself needs verbs and is
// checked in the Soft-RoCE VM (tests/rdma).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "gateway/rdma/hook.h"
#include "gateway/rdma/rdma_target.h"
#include "gateway/rdma/session_table.h"
#include "gateway/s3api/service.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/sigv4.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/gateway/signed_request.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// ---- x-amz-rdma-target ----

TEST_CASE("rdma target: objects and parts") {
  auto object = ParseRdmaTarget("/bkt/dir/a%20b.bin");
  REQUIRE(object.ok());
  CHECK(object->bucket == "bkt");
  CHECK(object->key == "dir/a b.bin");
  CHECK_FALSE(object->is_part());

  auto part = ParseRdmaTarget("/bkt/big.bin?partNumber=3&uploadId=u%2B1");
  REQUIRE(part.ok());
  CHECK(part->key == "big.bin");
  CHECK(part->part_number == 3);
  CHECK(part->upload_id == "u+1");
  auto reversed = ParseRdmaTarget("/bkt/k?uploadId=U&partNumber=10000");
  REQUIRE(reversed.ok());
  CHECK(reversed->part_number == 10000);
}

TEST_CASE("rdma target: everything else is refused") {
  for (const char* bad :
       {"", "bkt/key", "/bkt", "/bkt/", "/Bad_Bucket/k", "/bkt/../etc/passwd", "/bkt/k%zz",
        "/bkt/k?", "/bkt/k?partNumber=1", "/bkt/k?uploadId=U", "/bkt/k?partNumber=0&uploadId=U",
        "/bkt/k?partNumber=10001&uploadId=U", "/bkt/k?partNumber=1x&uploadId=U",
        "/bkt/k?partNumber=1&uploadId=", "/bkt/k?partNumber=1&uploadId=U&tagging",
        "/bkt/k?partNumber=1&partNumber=2&uploadId=U"}) {
    CAPTURE(bad);
    auto t = ParseRdmaTarget(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == StatusCode::kInvalidArgument);
  }
}

// ---- SessionTable ----

struct FakeSession {
  int n = 0;
};
using Table = SessionTable<FakeSession>;

TEST_CASE("session table: idle sessions expire, busy ones never") {
  testing::FakeClock clock;
  Table table({.max_sessions = 8, .idle_timeout = 10min}, clock);
  const std::string a = table.NewId();
  const std::string b = table.NewId();
  CHECK(a != b);
  std::vector<Table::Ptr> dropped;
  REQUIRE(table.Insert(a, std::make_shared<FakeSession>(FakeSession{1}), &dropped).ok());
  REQUIRE(table.Insert(b, std::make_shared<FakeSession>(FakeSession{2}), &dropped).ok());
  CHECK(dropped.empty());

  auto taken = table.Take(b);  // b is in a transfer
  REQUIRE(taken.ok());
  CHECK((*taken)->n == 2);
  CHECK(table.Take(b).status().code() == StatusCode::kUnavailable);

  clock.Advance(9min);
  CHECK(table.ReapIdle().empty());
  clock.Advance(2min);  // a idle 11 min; b busy for 11 min
  auto reaped = table.ReapIdle();
  REQUIRE(reaped.size() == 1);
  CHECK(reaped.front()->n == 1);
  CHECK(table.Take(a).status().code() == StatusCode::kNotFound);
  CHECK(table.size() == 1);

  // Idle time counts from the end of the last transfer, not from the PREPARE.
  CHECK(table.Return(b, /*keep=*/true) == nullptr);
  clock.Advance(10min);
  CHECK(table.ReapIdle().empty());
  clock.Advance(1s);
  CHECK(table.ReapIdle().size() == 1);
  CHECK(table.size() == 0);
}

TEST_CASE("session table: a full table drops the least recently used idle session") {
  testing::FakeClock clock;
  Table table({.max_sessions = 3, .idle_timeout = 10min}, clock);
  std::vector<Table::Ptr> dropped;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(table.NewId());
    REQUIRE(table.Insert(ids.back(), std::make_shared<FakeSession>(FakeSession{i}), &dropped).ok());
    clock.Advance(1s);
  }
  // Session 0 is used again: 1 is now the least recently used; 2 is busy.
  REQUIRE(table.Take(ids[0]).ok());
  clock.Advance(1s);
  table.Return(ids[0], true);
  REQUIRE(table.Take(ids[2]).ok());

  const std::string d = table.NewId();
  REQUIRE(table.Insert(d, std::make_shared<FakeSession>(FakeSession{3}), &dropped).ok());
  REQUIRE(dropped.size() == 1);
  CHECK(dropped.front()->n == 1);
  CHECK(table.size() == 3);
  CHECK(table.Take(ids[1]).status().code() == StatusCode::kNotFound);

  // Every session busy: refused, nothing dropped.
  REQUIRE(table.Take(ids[0]).ok());
  REQUIRE(table.Take(d).ok());
  dropped.clear();
  const Status full = table.Insert(table.NewId(), std::make_shared<FakeSession>(), &dropped);
  CHECK(full.code() == StatusCode::kUnavailable);
  CHECK(dropped.empty());
  CHECK(table.size() == 3);

  // A failed transfer drops its session; CANCEL drops one even while busy.
  CHECK(table.Return(ids[0], /*keep=*/false) != nullptr);
  CHECK(table.Erase(d) != nullptr);
  CHECK(table.Erase(d) == nullptr);
  CHECK(table.size() == 1);
}

TEST_CASE("session table: idle_timeout 0 never expires") {
  testing::FakeClock clock;
  Table table({.max_sessions = 2, .idle_timeout = Clock::Duration(0)}, clock);
  std::vector<Table::Ptr> dropped;
  REQUIRE(table.Insert(table.NewId(), std::make_shared<FakeSession>(), &dropped).ok());
  clock.Advance(24h * 365);
  CHECK(table.ReapIdle().empty());
  CHECK(table.size() == 1);
}

// ---- S3Service routing, with a fake RDMA server ----

// Stands in for RcServer: records what S3Service hands over and keeps the commit, which the test
// then runs on a temp file as a worker would after the RDMA READ.
class FakeRdmaHook final : public RdmaHook {
 public:
  http::Response Control(const http::Request& request, std::string_view op,
                         const RdmaPutPlanner& plan_put) override {
    ++control_calls;
    if (op != "prepare") return Answer(404);
    auto target = ParseRdmaTarget(*request.Find("x-amz-rdma-target"));
    if (!target.ok()) return Answer(400);
    RdmaPutPlan plan = plan_put(request, *target, std::stoull(*request.Find("x-amz-rdma-size")));
    if (auto* refused = std::get_if<http::Response>(&plan)) return std::move(*refused);
    commit = std::get<RdmaPutCommit>(std::move(plan));
    return Answer(200);
  }
  http::Response ServeGet(const http::Request&, http::Response plain) override { return plain; }
  http::Response ServePut(const http::Request&, uint64_t size, RdmaPutCommit c) override {
    ++put_calls;
    put_size = size;
    commit = std::move(c);
    return Answer(202);  // a marker: the real server answers after the transfer
  }
  static http::Response Answer(int status) {
    http::Response r;
    r.status = status;
    return r;
  }

  int control_calls = 0;
  int put_calls = 0;
  uint64_t put_size = 0;
  RdmaPutCommit commit;
};

struct Fixture {
  explicit Fixture(bool with_rdma) {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-rdma.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    auto s = Store::Open(dir + "/root");
    REQUIRE(s.ok());
    store = std::move(*s);
    ServiceOptions options;
    options.access_key = "AK";
    options.secret_key = "SK";
    options.max_put_size = 1 << 20;  // small, to test the limit without big numbers
    service = std::make_unique<S3Service>(*store, options);
    if (with_rdma) service->set_rdma(&hook);
  }
  ~Fixture() {
    service.reset();
    store.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  http::Response Send(const std::string& method, const std::string& path, const std::string& query,
                      const std::string& body, const TestHeaders& extra = {}) {
    return SendSigned(*service, method, path, query, body, extra);
  }

  // A session PUT as the client sends it: empty body, token, session, cookie, size.
  http::Response SessionPut(const std::string& path, const std::string& query, uint64_t size,
                            std::vector<std::pair<std::string, std::string>> extra = {}) {
    extra.emplace_back("x-amz-rdma-token", std::string(88, 'a'));
    extra.emplace_back("x-amz-rdma-session", "rc-1");
    extra.emplace_back("x-amz-rdma-cookie", "1234");
    extra.emplace_back("x-amz-rdma-size", std::to_string(size));
    return Send("PUT", path, query, "", extra);
  }

  // What a worker does once the bytes are in: a temp file, then the commit.
  http::Response Commit(const std::string& bytes) {
    REQUIRE(hook.commit);
    auto tmp = store->fs().CreateTmp("test");
    REQUIRE(tmp.ok());
    REQUIRE(tmp->Write(bytes).ok());
    return hook.commit(*tmp, s3::Md5Hex(bytes), bytes.size());
  }

  std::string Read(const std::string& bucket, const std::string& key) {
    std::ifstream in(dir + "/root/" + bucket + "/" + key, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static std::string Code(const http::Response& r) {
    auto err = s3::ParseErrorXml(r.body);
    return err.ok() ? err->code : "";
  }

  std::string dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<S3Service> service;
  FakeRdmaHook hook;
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

TEST_CASE("rdma put: without --rdma a token PUT is refused, never stored as 0 bytes") {
  Fixture f(/*with_rdma=*/false);
  REQUIRE(f.Send("PUT", "/bkt", "", "").status == 200);
  http::Response r = f.SessionPut("/bkt/obj", "", 1000);
  CHECK(r.status == 400);
  CHECK(Fixture::Code(r) == "InvalidArgument");
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/obj"));
  CHECK(f.store->Head("bkt", "obj").status().code() == StatusCode::kNotFound);
  // A plain empty PUT is still an empty object.
  CHECK(f.Send("PUT", "/bkt/empty", "", "").status == 200);
  CHECK(fs::exists(f.dir + "/root/bkt/empty"));
}

TEST_CASE("rdma put: a session PutObject goes to the hook and commits like a PUT") {
  Fixture f(/*with_rdma=*/true);
  REQUIRE(f.Send("PUT", "/bkt", "", "").status == 200);
  http::Response r =
      f.SessionPut("/bkt/dir/obj.bin", "", 300'000,
                   {{"content-type", "application/x-test"}, {"x-amz-meta-origin", "rdma"}});
  REQUIRE(r.status == 202);
  CHECK(f.hook.put_calls == 1);
  CHECK(f.hook.put_size == 300'000);
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/dir/obj.bin"));  // nothing before the transfer

  const std::string bytes = Pattern(300'000);
  http::Response done = f.Commit(bytes);
  REQUIRE(done.status == 200);
  const std::string etag = "\"" + s3::Md5Hex(bytes) + "\"";
  bool has_etag = false;
  for (const auto& [n, v] : done.headers) has_etag |= n == "ETag" && v == etag;
  CHECK(has_etag);
  CHECK(f.Read("bkt", "dir/obj.bin") == bytes);
  auto rec = f.store->Head("bkt", "dir/obj.bin");
  REQUIRE(rec.ok());
  CHECK(rec->size == bytes.size());
  CHECK(rec->content_type == "application/x-test");
  CHECK(rec->user_meta.at("origin") == "rdma");
}

TEST_CASE("rdma put: the usual PUT rules refuse before any transfer") {
  Fixture f(/*with_rdma=*/true);
  REQUIRE(f.Send("PUT", "/bkt", "", "").status == 200);
  auto refused = [&](const http::Response& r, int status, const std::string& code) {
    CHECK(r.status == status);
    CHECK(Fixture::Code(r) == code);
    CHECK(f.hook.put_calls == 0);
  };
  refused(f.SessionPut("/nobkt/obj", "", 10), 404, "NoSuchBucket");
  refused(f.SessionPut("/bkt/obj", "", (1 << 20) + 1), 413, "EntityTooLarge");
  refused(f.SessionPut("/bkt/obj", "", 0), 400, "InvalidArgument");
  refused(f.SessionPut("/bkt/obj", "", 10, {{"x-amz-storage-class", "NOPE"}}), 400,
          "InvalidStorageClass");
  refused(f.SessionPut("/bkt/obj", "partNumber=1&uploadId=nope", 10), 404, "NoSuchUpload");
  refused(f.SessionPut("/bkt/obj", "partNumber=0&uploadId=nope", 10), 400, "InvalidArgument");
  refused(f.SessionPut("/bkt/obj", "tagging", 10), 501, "NotImplemented");
  // A body with a token: which one is the object? Refused.
  http::Response with_body =
      f.Send("PUT", "/bkt/obj", "", "data",
             {{"x-amz-rdma-token", std::string(88, 'a')}, {"x-amz-rdma-size", "4"}});
  refused(with_body, 400, "InvalidArgument");
  // An unsigned request never gets that far.
  http::Request unsigned_put;
  unsigned_put.method = "PUT";
  unsigned_put.target = "/bkt/obj";
  unsigned_put.headers = {{"host", "h"}, {"x-amz-rdma-token", std::string(88, 'a')}};
  auto started = f.service->Start(std::move(unsigned_put));
  REQUIRE(std::holds_alternative<http::Response>(started));
  CHECK(std::get<http::Response>(started).status == 403);
  CHECK(f.hook.put_calls == 0);
  CHECK(f.store->Head("bkt", "obj").status().code() == StatusCode::kNotFound);
}

TEST_CASE("rdma put: UploadPart over RDMA, and the upload going away meanwhile") {
  Fixture f(/*with_rdma=*/true);
  REQUIRE(f.Send("PUT", "/bkt", "", "").status == 200);
  auto created = f.store->CreateUpload("bkt", "big", PutOptions{});
  REQUIRE(created.ok());
  const std::string q = "partNumber=2&uploadId=" + *created;
  REQUIRE(f.SessionPut("/bkt/big", q, 1000).status == 202);
  const std::string bytes = Pattern(1000);
  http::Response done = f.Commit(bytes);
  REQUIRE(done.status == 200);
  auto parts = f.store->catalog().ListParts(*created);
  REQUIRE(parts.ok());
  REQUIRE(parts->size() == 1);
  CHECK(parts->front().part_number == 2);
  CHECK(parts->front().etag == s3::Md5Hex(bytes));

  // Aborted between the check and the end of the transfer: NoSuchUpload, no part.
  REQUIRE(f.SessionPut("/bkt/big", "partNumber=3&uploadId=" + *created, 1000).status == 202);
  auto upload = f.store->GetUpload("bkt", "big", *created);
  REQUIRE(upload.ok());
  REQUIRE(f.store->AbortUpload(*upload).ok());
  http::Response late = f.Commit(bytes);
  CHECK(late.status == 404);
  CHECK(Fixture::Code(late) == "NoSuchUpload");
}

TEST_CASE("rdma put: PREPARE with op PUT is planned like the PUT") {
  Fixture f(/*with_rdma=*/true);
  REQUIRE(f.Send("PUT", "/bkt", "", "").status == 200);
  auto prepare = [&](const std::string& target, uint64_t size) {
    return f.Send("POST", "/.hipobj-rc/prepare", "", "",
                  {{"x-amz-rdma-target", target},
                   {"x-amz-rdma-size", std::to_string(size)},
                   {"x-amz-meta-via", "prepare"}});
  };
  http::Response missing = prepare("/nobkt/k", 10);
  CHECK(missing.status == 404);
  CHECK(Fixture::Code(missing) == "NoSuchBucket");
  http::Response big = prepare("/bkt/k", (1 << 20) + 1);
  CHECK(big.status == 413);
  CHECK(Fixture::Code(big) == "EntityTooLarge");
  http::Response no_upload = prepare("/bkt/k?partNumber=1&uploadId=zzz", 10);
  CHECK(no_upload.status == 404);
  CHECK(Fixture::Code(no_upload) == "NoSuchUpload");
  CHECK_FALSE(f.hook.commit);

  REQUIRE(prepare("/bkt/k", 5000).status == 200);
  const std::string bytes = Pattern(5000);
  REQUIRE(f.Commit(bytes).status == 200);
  CHECK(f.Read("bkt", "k") == bytes);
  auto rec = f.store->Head("bkt", "k");
  REQUIRE(rec.ok());
  CHECK(rec->etag == s3::Md5Hex(bytes));
  CHECK(rec->user_meta.at("via") == "prepare");

  // A directory marker holds no data: the commit refuses and nothing is stored.
  REQUIRE(prepare("/bkt/dir/", 10).status == 200);
  http::Response marker = f.Commit("0123456789");
  CHECK(marker.status == 400);
  CHECK(Fixture::Code(marker) == "DirectoryObjectContainsData");
  CHECK(f.store->Head("bkt", "dir/").status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace reelfs::gateway

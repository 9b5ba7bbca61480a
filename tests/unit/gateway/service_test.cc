// S3Service driven in-process (no sockets): signed requests built with s3::SignRequest, answers
// checked for status, S3 error code and side effects on the root.
#include "gateway/s3api/service.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <sys/mount.h>

#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/list_codec.h"
#include "s3/protocol/sigv4.h"
#include "s3/protocol/uri.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  // tmpfs_bytes > 0: the root is a tmpfs of that size (needs root; mounted is false otherwise).
  explicit Fixture(size_t tmpfs_bytes = 0) {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-svc.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    if (tmpfs_bytes > 0) {
      fs::create_directories(dir + "/root");
      std::string opts = "size=" + std::to_string(tmpfs_bytes);
      mounted = ::mount("tmpfs", (dir + "/root").c_str(), "tmpfs", 0, opts.c_str()) == 0;
      if (!mounted) return;
    }
    auto s = Store::Open(dir + "/root");
    REQUIRE(s.ok());
    store = std::move(*s);
    ServiceOptions options;
    options.access_key = "AK";
    options.secret_key = "SK";
    options.virtual_host_domain = "s3.test";
    service = std::make_unique<S3Service>(*store, options);
  }
  ~Fixture() {
    service.reset();
    store.reset();
    if (mounted) ::umount2((dir + "/root").c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // Sends a request with a body (UNSIGNED-PAYLOAD), fed to the exchange in 64 KiB chunks.
  http::Response Send(const std::string& method, const std::string& path, const std::string& query,
                      const std::string& body,
                      const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    s3::SignableRequest req;
    req.method = method;
    req.encoded_path = path;
    req.raw_query = query;
    req.headers = {{"host", "127.0.0.1:7070"},
                   {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
                   {"content-length", std::to_string(body.size())}};
    req.headers.insert(req.headers.end(), extra.begin(), extra.end());
    s3::SigV4Params params;
    params.time = std::chrono::system_clock::now();
    s3::SignRequest(req, s3::Credentials{"AK", "SK", ""}, params);
    http::Request h;
    h.method = method;
    h.target = path + (query.empty() ? "" : "?" + query);
    h.headers = req.headers;
    h.has_body = !body.empty();
    h.request_id = "TEST";
    auto started = service->Start(std::move(h));
    if (auto* r = std::get_if<http::Response>(&started)) return std::move(*r);
    auto& ex = std::get<std::unique_ptr<http::Exchange>>(started);
    for (size_t off = 0; off < body.size(); off += 64 * 1024) {
      ex->OnBody(std::string_view(body).substr(off, 64 * 1024));
    }
    return ex->Finish();
  }

  // Sends a body-less request; returns the immediate response.
  http::Response Call(const std::string& method, const std::string& path,
                      const std::string& query = "", const std::string& host = "127.0.0.1:7070",
                      const std::string& secret = "SK") {
    s3::SignableRequest req;
    req.method = method;
    req.encoded_path = path;
    req.raw_query = query;
    req.headers = {{"host", host}};
    s3::SigV4Params params;
    params.time = std::chrono::system_clock::now();
    s3::SignRequest(req, s3::Credentials{"AK", secret, ""}, params);
    http::Request h;
    h.method = method;
    h.target = path + (query.empty() ? "" : "?" + query);
    h.headers = req.headers;
    h.request_id = "TEST";
    auto started = service->Start(std::move(h));
    REQUIRE(std::holds_alternative<http::Response>(started));
    return std::move(std::get<http::Response>(started));
  }

  static std::string Code(const http::Response& r) {
    auto err = s3::ParseErrorXml(r.body);
    return err.ok() ? err->code : "";
  }

  std::string dir;
  bool mounted = false;
  std::unique_ptr<Store> store;
  std::unique_ptr<S3Service> service;
};

TEST_CASE("service: auth, hostile keys, unknown subresources, virtual hosts") {
  Fixture f;
  CHECK(f.Call("PUT", "/bkt").status == 200);
  CHECK(fs::is_directory(f.dir + "/root/bkt"));

  auto wrong = f.Call("GET", "/bkt", "list-type=2", "127.0.0.1:7070", "wrong");
  CHECK(wrong.status == 403);
  CHECK(Fixture::Code(wrong) == "SignatureDoesNotMatch");

  http::Request unsigned_req;
  unsigned_req.method = "GET";
  unsigned_req.target = "/bkt/x";
  unsigned_req.headers = {{"host", "127.0.0.1"}};
  auto started = f.service->Start(std::move(unsigned_req));
  REQUIRE(std::holds_alternative<http::Response>(started));
  CHECK(std::get<http::Response>(started).status == 403);
  CHECK(Fixture::Code(std::get<http::Response>(started)) == "AccessDenied");

  for (const char* path : {"/bkt/a/../../etc/passwd", "/bkt/..", "/bkt/a//b", "/bkt/%00x",
                           "/bkt/.reelfs-gateway/credentials", "/bkt/%FF%FE"}) {
    CAPTURE(path);
    auto r = f.Call("GET", path);
    CHECK(r.status == 400);
    CHECK(Fixture::Code(r) == "InvalidArgument");
  }
  CHECK(Fixture::Code(f.Call("GET", "/bkt/" + std::string(1100, 'k'))) == "KeyTooLongError");
  CHECK(Fixture::Code(f.Call("GET", "/Bad_Bucket/x")) == "InvalidBucketName");

  auto acl = f.Call("GET", "/bkt/x", "acl=");
  CHECK(acl.status == 501);
  CHECK(Fixture::Code(acl) == "NotImplemented");
  CHECK(f.Call("POST", "/bkt/x").status == 501);
  CHECK(f.Call("PATCH", "/bkt/x").status == 405);

  auto head = f.Call("HEAD", "/bkt/missing");
  CHECK(head.status == 404);
  CHECK(head.omit_body);
  CHECK(Fixture::Code(f.Call("GET", "/nobucket/x")) == "NoSuchBucket");
  CHECK(Fixture::Code(f.Call("GET", "/bkt/missing")) == "NoSuchKey");
  CHECK(f.Call("DELETE", "/bkt/missing").status == 204);

  // Virtual-host style: Host bkt.s3.test, path is the key.
  fs::create_directories(f.dir + "/root/bkt/d");
  { std::ofstream(f.dir + "/root/bkt/d/obj") << "data"; }
  auto vh = f.Call("GET", "/d/obj", "", "bkt.s3.test:7070");
  CHECK(vh.status == 200);
  CHECK(vh.stream_length == 4);
  auto list = f.Call("GET", "/", "list-type=2", "bkt.s3.test");
  CHECK(list.status == 200);
  CHECK(list.body.find("<Key>d/obj</Key>") != std::string::npos);

  CHECK(Fixture::Code(f.Call("DELETE", "/bkt")) == "BucketNotEmpty");
}

TEST_CASE("service: multipart upload ids are never path components") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  fs::create_directories(f.dir + "/victim");
  { std::ofstream(f.dir + "/victim/keep") << "x"; }
  for (const char* id :
       {"..%2F..%2F..%2Fvictim", "..", "%2E%2E", "", "0123456789abcdef0123456789ABCDEF",
        "0123456789abcdef0123456789abcde%2F"}) {
    CAPTURE(id);
    std::string q = std::string("partNumber=1&uploadId=") + id;
    CHECK(Fixture::Code(f.Call("PUT", "/bkt/k", q)) == "NoSuchUpload");
    CHECK(Fixture::Code(f.Call("DELETE", "/bkt/k", std::string("uploadId=") + id)) ==
          "NoSuchUpload");
    CHECK(Fixture::Code(f.Send("POST", "/bkt/k", std::string("uploadId=") + id,
                               "<CompleteMultipartUpload/>")) == "NoSuchUpload");
  }
  CHECK(fs::exists(f.dir + "/victim/keep"));
}

TEST_CASE("service: ListObjects v1 pages by marker, NextMarker only with a delimiter") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  for (const char* key : {"a/1", "a/2", "b", "c/1", "d"}) {
    REQUIRE(f.Send("PUT", std::string("/bkt/") + key, "", "x").status == 200);
  }
  // With a delimiter: a/ b c/ d, one per page, following NextMarker.
  std::vector<std::string> seen;
  std::string marker;
  for (int i = 0; i < 10; ++i) {
    std::string q = "delimiter=%2F&max-keys=1";
    if (!marker.empty()) q += "&marker=" + s3::UriEncode(marker, false);
    auto r = f.Call("GET", "/bkt", q);
    REQUIRE(r.status == 200);
    auto page = s3::ParseListObjectsV1(r.body);
    REQUIRE(page.ok());
    for (const auto& o : page->page.objects) seen.push_back(o.key);
    for (const auto& p : page->page.common_prefixes) seen.push_back(p);
    if (!page->page.is_truncated) {
      CHECK(page->next_marker.empty());
      break;
    }
    REQUIRE(!page->next_marker.empty());
    marker = page->next_marker;
  }
  CHECK(seen == std::vector<std::string>{"a/", "b", "c/", "d"});

  // Without one: no NextMarker; the client continues from the last key.
  auto r = f.Call("GET", "/bkt", "max-keys=2&marker=a%2F1");
  REQUIRE(r.status == 200);
  auto page = s3::ParseListObjectsV1(r.body);
  REQUIRE(page.ok());
  CHECK(page->page.is_truncated);
  CHECK(page->next_marker.empty());
  REQUIRE(page->page.objects.size() == 2);
  CHECK(page->page.objects[0].key == "a/2");
  CHECK(page->page.objects[1].key == "b");
  CHECK(r.body.find("<Marker>a/1</Marker>") != std::string::npos);
  CHECK(r.body.find("NextContinuationToken") == std::string::npos);
}

TEST_CASE("service: response header overrides cannot split the response") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/k", "", "data").status == 200);
  auto ok = f.Call("GET", "/bkt/k", "response-content-type=text%2Fplain");
  CHECK(ok.status == 200);
  for (const char* q : {"response-content-type=text%0D%0ASet-Cookie%3A%20x%3D1",
                        "response-content-disposition=a%0Ab", "response-expires=%00"}) {
    CAPTURE(q);
    auto r = f.Call("GET", "/bkt/k", q);
    CHECK(r.status == 400);
    CHECK(Fixture::Code(r) == "InvalidArgument");
  }
}

TEST_CASE("service: a PUT on a full disk is 507, the old object and no temp file remain") {
  Fixture f(2 << 20);
  if (!f.mounted) {
    MESSAGE("skipped: cannot mount a tmpfs (needs root)");
    return;
  }
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/k", "", "old").status == 200);
  auto full = f.Send("PUT", "/bkt/k", "", std::string(3 << 20, 'n'));
  CHECK(full.status == 507);
  CHECK(Fixture::Code(full) == "InsufficientStorage");
  CHECK(fs::is_empty(f.dir + "/root/.reelfs-gateway/tmp"));
  std::ifstream in(f.dir + "/root/bkt/k");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "old");
  auto head = f.Call("HEAD", "/bkt/k");
  CHECK(head.status == 200);
  CHECK(head.stream_length == 3);
  bool etag_ok = false;
  for (const auto& [n, v] : head.headers) {
    if (n == "ETag") etag_ok = v == "\"" + s3::Md5Hex("old") + "\"";
  }
  CHECK(etag_ok);
  // Space comes back once the failed upload is gone: a small PUT works again.
  CHECK(f.Send("PUT", "/bkt/k2", "", "new").status == 200);
}

TEST_CASE("service: a signature scoped to another region is refused") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  s3::SignableRequest req;
  req.method = "GET";
  req.encoded_path = "/bkt";
  req.raw_query = "list-type=2";
  req.headers = {{"host", "127.0.0.1:7070"}};
  s3::SigV4Params params;
  params.region = "eu-west-1";
  params.time = std::chrono::system_clock::now();
  s3::SignRequest(req, s3::Credentials{"AK", "SK", ""}, params);
  http::Request h;
  h.method = "GET";
  h.target = "/bkt?list-type=2";
  h.headers = req.headers;
  auto started = f.service->Start(std::move(h));
  REQUIRE(std::holds_alternative<http::Response>(started));
  auto& r = std::get<http::Response>(started);
  CHECK(r.status == 400);
  CHECK(Fixture::Code(r) == "AuthorizationHeaderMalformed");
}

TEST_CASE("service: CopyObject refuses hostile sources and unknown storage classes") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/src", "", "data").status == 200);
  for (const char* src :
       {"/bkt/../../etc/passwd", "bkt/a%2F..%2F..%2Fx", "/.reelfs-gateway/catalog.db",
        "/bkt/.reelfs-gateway/x", "/bkt/%00", "/bkt", "/BKT/src"}) {
    CAPTURE(src);
    auto r = f.Send("PUT", "/bkt/dst", "", "", {{"x-amz-copy-source", src}});
    CHECK(r.status == 400);
    CHECK_FALSE(fs::exists(f.dir + "/root/bkt/dst"));
  }
  auto bad_sc = f.Send("PUT", "/bkt/dst", "", "",
                       {{"x-amz-copy-source", "/bkt/src"}, {"x-amz-storage-class", "BOGUS"}});
  CHECK(Fixture::Code(bad_sc) == "InvalidStorageClass");
  CHECK(f.Send("PUT", "/bkt/dst", "", "", {{"x-amz-copy-source", "/bkt/src"}}).status == 200);
}

}  // namespace
}  // namespace reelfs::gateway

// S3Service driven in-process (no sockets): signed requests built with s3::SignRequest, answers
// checked for status, S3 error code and side effects on the root.
#include "gateway/s3api/service.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/error_codec.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  Fixture() {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-svc.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
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
    std::error_code ec;
    fs::remove_all(dir, ec);
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
  CHECK(f.Call("GET", "/bkt", "").status == 501);  // ListObjects v1
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

}  // namespace
}  // namespace reelfs::gateway

// S3Service driven in-process (no sockets): signed requests built with s3::SignRequest, answers
// checked for status, S3 error code and side effects on the root.
#include "gateway/s3api/service.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <doctest/doctest.h>
#include <sys/mount.h>

#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/list_codec.h"
#include "s3/protocol/sigv4.h"
#include "s3/protocol/uri.h"
#include "tests/unit/gateway/signed_request.h"
#include "tests/unit/gateway/tmp_leftovers.h"

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
                      const std::string& body, const TestHeaders& extra = {}) {
    return SendSigned(*service, method, path, query, body, extra);
  }

  // Sends a body-less request; returns the immediate response.
  http::Response Call(const std::string& method, const std::string& path,
                      const std::string& query = "", const std::string& host = "127.0.0.1:7070",
                      const std::string& secret = "SK") {
    auto started = service->Start(
        SignedRequest(method, path, query, {{"host", host}}, /*has_body=*/false, secret));
    REQUIRE(std::holds_alternative<http::Response>(started));
    return std::move(std::get<http::Response>(started));
  }

  // A request signed with exactly `signed_headers` (plus what SignRequest adds: x-amz-date and
  // x-amz-content-sha256 = payload_hash), then `added` appended unsigned. The body is made after
  // signing from the chunk signing context of the request (for aws-chunked bodies).
  struct Raw {
    std::string method = "PUT";
    std::string path;
    std::string query;
    std::string payload_hash = "UNSIGNED-PAYLOAD";
    std::vector<std::pair<std::string, std::string>> signed_headers;
    std::vector<std::pair<std::string, std::string>> added;
    std::function<std::string(const s3::ChunkSigningContext&)> body;
    size_t feed = 4096;  // bytes per OnBody call
  };
  http::Response SendRaw(const Raw& raw) {
    s3::SignableRequest req;
    req.method = raw.method;
    req.encoded_path = raw.path;
    req.raw_query = raw.query;
    req.headers = {{"host", "127.0.0.1:7070"}};
    req.headers.insert(req.headers.end(), raw.signed_headers.begin(), raw.signed_headers.end());
    req.payload_hash = raw.payload_hash;
    s3::SigV4Params params;
    params.time = std::chrono::system_clock::now();
    s3::SignRequest(req, s3::Credentials{"AK", "SK", ""}, params);
    std::string auth;
    for (const auto& [n, v] : req.headers) {
      if (n == "authorization") auth = v;
    }
    const std::string date = s3::FormatAmzDate(params.time);
    const s3::ChunkSigningContext ctx{
        .signing_key = s3::SigningKey("SK", date.substr(0, 8), "us-east-1", "s3"),
        .amz_date = date,
        .scope = date.substr(0, 8) + "/us-east-1/s3/aws4_request",
        .seed_signature = auth.substr(auth.size() - 64)};
    const std::string body = raw.body ? raw.body(ctx) : std::string();
    http::Request h;
    h.method = raw.method;
    h.target = raw.path + (raw.query.empty() ? "" : "?" + raw.query);
    h.headers = req.headers;
    h.headers.insert(h.headers.end(), raw.added.begin(), raw.added.end());
    h.has_body = !body.empty();
    h.request_id = "TEST";
    auto started = service->Start(std::move(h));
    if (auto* r = std::get_if<http::Response>(&started)) return std::move(*r);
    auto& ex = std::get<std::unique_ptr<http::Exchange>>(started);
    for (size_t off = 0; off < body.size(); off += raw.feed) {
      ex->OnBody(std::string_view(body).substr(off, raw.feed));
    }
    return ex->Finish();
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
    CHECK(Fixture::Code(f.Call("GET", "/bkt/k", std::string("uploadId=") + id)) == "NoSuchUpload");
  }
  CHECK(fs::exists(f.dir + "/victim/keep"));
}

TEST_CASE("service: ListMultipartUploads and ListParts answer as AWS, bad parameters 400") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  auto created = f.Call("POST", "/bkt/dir/k%26x", "uploads=");
  REQUIRE(created.status == 200);
  const size_t a = created.body.find("<UploadId>") + 10;
  const std::string id = created.body.substr(a, created.body.find("</UploadId>") - a);

  auto list = f.Call("GET", "/bkt", "uploads=");
  CHECK(list.status == 200);
  CHECK(list.body.find("<Key>dir/k&amp;x</Key>") != std::string::npos);
  CHECK(list.body.find("<UploadId>" + id + "</UploadId>") != std::string::npos);
  auto encoded = f.Call("GET", "/bkt", "delimiter=%2F&encoding-type=url&uploads=");
  CHECK(encoded.status == 200);
  CHECK(encoded.body.find("<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>") !=
        std::string::npos);
  CHECK(encoded.body.find("<EncodingType>url</EncodingType>") != std::string::npos);
  CHECK(Fixture::Code(f.Call("GET", "/bkt", "max-uploads=abc&uploads=")) == "InvalidArgument");
  CHECK(Fixture::Code(f.Call("GET", "/bkt", "max-uploads=-1&uploads=")) == "InvalidArgument");
  CHECK(Fixture::Code(f.Call("GET", "/bkt", "encoding-type=xml&uploads=")) == "InvalidArgument");
  CHECK(Fixture::Code(f.Call("GET", "/nobkt", "uploads=")) == "NoSuchBucket");

  auto parts = f.Call("GET", "/bkt/dir/k%26x", "uploadId=" + id);
  CHECK(parts.status == 200);
  CHECK(parts.body.find("<ListPartsResult") != std::string::npos);
  CHECK(parts.body.find("<IsTruncated>false</IsTruncated>") != std::string::npos);
  CHECK(Fixture::Code(f.Call("GET", "/bkt/dir/k%26x", "max-parts=x&uploadId=" + id)) ==
        "InvalidArgument");
  CHECK(Fixture::Code(f.Call("GET", "/bkt/dir/k%26x", "part-number-marker=-3&uploadId=" + id)) ==
        "InvalidArgument");
  // Another key's upload id, and a hostile key: refused before any listing.
  CHECK(Fixture::Code(f.Call("GET", "/bkt/other", "uploadId=" + id)) == "NoSuchUpload");
  CHECK(f.Call("GET", "/bkt/a/../../x", "uploadId=" + id).status == 400);
  CHECK(f.Call("HEAD", "/bkt/dir/k%26x", "uploadId=" + id).status == 405);
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
  CHECK(testing::TmpLeftovers(f.store->fs().tmp_path()).empty());
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

// ---- issue 17, security items 1-4 ----

TEST_CASE("service: x-amz-* headers that are not signed are refused, nothing is acted on") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/obj", "", "the source").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/victim", "", "the victim").status == 200);
  // Signed host;x-amz-content-sha256;x-amz-date, then x-amz-copy-source added: the report's
  // attack, which made victim a copy of obj.
  for (const auto& extra :
       std::vector<std::pair<std::string, std::string>>{{"x-amz-copy-source", "/bkt/obj"},
                                                        {"x-amz-meta-owner", "mallory"},
                                                        {"X-Amz-Storage-Class", "GLACIER"}}) {
    CAPTURE(extra.first);
    auto r = f.SendRaw({.path = "/bkt/victim",
                        .payload_hash = std::string(s3::kEmptyPayloadSha256),
                        .added = {extra}});
    CHECK(r.status == 403);
    CHECK(Fixture::Code(r) == "AccessDenied");
    CHECK(r.body.find("There were headers present in the request which were not signed") !=
          std::string::npos);
  }
  std::ifstream in(f.dir + "/root/bkt/victim");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "the victim");
  // The same headers, signed, are acted on.
  auto copied = f.SendRaw({.path = "/bkt/victim",
                           .payload_hash = std::string(s3::kEmptyPayloadSha256),
                           .signed_headers = {{"x-amz-copy-source", "/bkt/obj"}}});
  CHECK(copied.status == 200);
}

TEST_CASE("service: x-amz-content-sha256 must be a documented value and match the body") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  auto body_of = [](std::string text) {
    return [text](const s3::ChunkSigningContext&) { return text; };
  };
  std::string upper_other = s3::Sha256Hex("other data");
  for (char& c : upper_other) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // An upper-case hash of other data was stored before (only lower case was checked).
  auto r = f.SendRaw({.path = "/bkt/a", .payload_hash = upper_other, .body = body_of("data")});
  CHECK(r.status == 400);
  CHECK(Fixture::Code(r) == "XAmzContentSHA256Mismatch");
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/a"));
  for (const std::string& claim : {std::string("zz-not-hex"), std::string(64, 'z'),
                                   std::string("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD")}) {
    CAPTURE(claim);
    auto bad = f.SendRaw({.path = "/bkt/a", .payload_hash = claim, .body = body_of("data")});
    CHECK(bad.status == 400);
    CHECK(Fixture::Code(bad) == "InvalidArgument");
    CHECK_FALSE(fs::exists(f.dir + "/root/bkt/a"));
  }
  // The right hash in upper case is accepted.
  std::string upper = s3::Sha256Hex("data");
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(f.SendRaw({.path = "/bkt/a", .payload_hash = upper, .body = body_of("data")}).status ==
        200);
  // A request without a body claiming the hash of one.
  auto get = f.SendRaw({.method = "GET", .path = "/bkt/a", .payload_hash = s3::Sha256Hex("x")});
  CHECK(get.status == 400);
  CHECK(Fixture::Code(get) == "XAmzContentSHA256Mismatch");
}

// An aws-chunked body of `data` in chunks of `chunk` bytes, signed from ctx (or, with
// `zero_from` set, every signature from that chunk on replaced by 64 zeros).
std::string SignedChunked(const s3::ChunkSigningContext& ctx, const std::string& data, size_t chunk,
                          size_t zero_from = SIZE_MAX) {
  std::string out;
  std::string prev = ctx.seed_signature;
  size_t n = 0;
  for (size_t off = 0;; off += chunk, ++n) {
    const std::string piece = data.substr(std::min(off, data.size()), chunk);
    std::string sig = s3::ChunkSignature(ctx, prev, s3::Sha256Hex(piece));
    prev = sig;
    if (n >= zero_from) sig = std::string(64, '0');
    char size[32];
    std::snprintf(size, sizeof(size), "%zx", piece.size());
    out += std::string(size) + ";chunk-signature=" + sig + "\r\n" + piece + "\r\n";
    if (piece.empty()) break;
  }
  return out;
}

TEST_CASE("service: aws-chunked chunk signatures are verified before anything is stored") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 % 251);
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"content-encoding", "aws-chunked"},
      {"x-amz-decoded-content-length", std::to_string(data.size())}};
  auto good = f.SendRaw(
      {.path = "/bkt/chunked",
       .payload_hash = std::string(s3::kStreamingSignedPayload),
       .signed_headers = headers,
       .body = [&](const s3::ChunkSigningContext& c) { return SignedChunked(c, data, 65536); },
       .feed = 1000});
  REQUIRE(good.status == 200);
  {
    std::ifstream in(f.dir + "/root/bkt/chunked", std::ios::binary);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == data);
  }
  // A chunk signed 000...0 (the report), the final chunk's signature wrong, a signature from
  // another request: 403 SignatureDoesNotMatch, nothing stored.
  for (size_t zero_from : {size_t{0}, size_t{2}, size_t{4}}) {
    CAPTURE(zero_from);
    auto bad = f.SendRaw({.path = "/bkt/forged",
                          .payload_hash = std::string(s3::kStreamingSignedPayload),
                          .signed_headers = headers,
                          .body = [&](const s3::ChunkSigningContext& c) {
                            return SignedChunked(c, data, 65536, zero_from);
                          }});
    CHECK(bad.status == 403);
    CHECK(Fixture::Code(bad) == "SignatureDoesNotMatch");
    CHECK_FALSE(fs::exists(f.dir + "/root/bkt/forged"));
  }
  auto replayed = f.SendRaw({.path = "/bkt/forged",
                             .payload_hash = std::string(s3::kStreamingSignedPayload),
                             .signed_headers = headers,
                             .body = [&](const s3::ChunkSigningContext& c) {
                               s3::ChunkSigningContext other = c;
                               other.seed_signature = std::string(64, 'a');
                               return SignedChunked(other, data, 65536);
                             }});
  CHECK(Fixture::Code(replayed) == "SignatureDoesNotMatch");
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/forged"));
  // No temporary file is left behind by the refusals.
  CHECK(testing::TmpLeftovers(f.store->fs().tmp_path()).empty());

  // STREAMING-UNSIGNED-PAYLOAD-TRAILER: the trailing checksum is verified.
  for (const bool right : {true, false}) {
    CAPTURE(right);
    auto r = f.SendRaw({.path = right ? "/bkt/trailer-ok" : "/bkt/trailer-bad",
                        .payload_hash = std::string(s3::kStreamingUnsignedPayloadTrailer),
                        .signed_headers = {{"content-encoding", "aws-chunked"},
                                           {"x-amz-decoded-content-length", "3"},
                                           {"x-amz-trailer", "x-amz-checksum-crc32"}},
                        .body = [&](const s3::ChunkSigningContext&) {
                          return std::string("3\r\n") + (right ? "abc" : "abd") +
                                 "\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n";
                        }});
    CHECK(r.status == (right ? 200 : 400));
    if (!right) CHECK(Fixture::Code(r) == "BadDigest");
    CHECK(fs::exists(f.dir + (right ? "/root/bkt/trailer-ok" : "/root/bkt/trailer-bad")) == right);
  }
}

TEST_CASE("service: x-amz-checksum-* headers are verified; XML bodies may be aws-chunked") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  auto body_of = [](std::string text) {
    return [text](const s3::ChunkSigningContext&) { return text; };
  };
  // CRC32("abc") = NSRBwg== (what boto3 sends on PutObject, UploadPart and DeleteObjects).
  auto ok = f.SendRaw({.path = "/bkt/crc-ok",
                       .signed_headers = {{"x-amz-checksum-crc32", "NSRBwg=="}},
                       .body = body_of("abc")});
  CHECK(ok.status == 200);
  auto bad = f.SendRaw({.path = "/bkt/crc-bad",
                        .signed_headers = {{"x-amz-checksum-crc32", "NSRBwg=="}},
                        .body = body_of("abd")});
  CHECK(bad.status == 400);
  CHECK(Fixture::Code(bad) == "BadDigest");
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/crc-bad"));
  auto two = f.SendRaw(
      {.path = "/bkt/crc-two",
       .signed_headers = {{"x-amz-checksum-crc32", "NSRBwg=="}, {"x-amz-checksum-sha256", "x"}},
       .body = body_of("abc")});
  CHECK(Fixture::Code(two) == "InvalidRequest");
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/crc-two"));

  // DeleteObjects: a wrong checksum deletes nothing; an aws-chunked body is verified first.
  const std::string xml = "<Delete><Object><Key>crc-ok</Key></Object></Delete>";
  auto del_bad = f.SendRaw({.method = "POST",
                            .path = "/bkt",
                            .query = "delete=",
                            .signed_headers = {{"x-amz-checksum-crc32", "NSRBwg=="}},
                            .body = body_of(xml)});
  CHECK(Fixture::Code(del_bad) == "BadDigest");
  CHECK(fs::exists(f.dir + "/root/bkt/crc-ok"));
  const std::vector<std::pair<std::string, std::string>> chunked = {
      {"content-encoding", "aws-chunked"},
      {"x-amz-decoded-content-length", std::to_string(xml.size())}};
  auto del_forged = f.SendRaw(
      {.method = "POST",
       .path = "/bkt",
       .query = "delete=",
       .payload_hash = std::string(s3::kStreamingSignedPayload),
       .signed_headers = chunked,
       .body = [&](const s3::ChunkSigningContext& c) { return SignedChunked(c, xml, 65536, 0); }});
  CHECK(Fixture::Code(del_forged) == "SignatureDoesNotMatch");
  CHECK(fs::exists(f.dir + "/root/bkt/crc-ok"));
  auto del = f.SendRaw(
      {.method = "POST",
       .path = "/bkt",
       .query = "delete=",
       .payload_hash = std::string(s3::kStreamingSignedPayload),
       .signed_headers = chunked,
       .body = [&](const s3::ChunkSigningContext& c) { return SignedChunked(c, xml, 65536); }});
  CHECK(del.status == 200);
  CHECK_FALSE(fs::exists(f.dir + "/root/bkt/crc-ok"));
}

TEST_CASE("service: a directory symlink planted in the root answers like a missing key") {
  Fixture f;
  REQUIRE(f.Call("PUT", "/bkt").status == 200);
  REQUIRE(f.Send("PUT", "/bkt/real", "", "real object").status == 200);
  const std::string outside = f.dir + "/outside";
  fs::create_directories(outside);
  { std::ofstream(outside + "/secret") << "top secret"; }
  fs::create_directory_symlink(outside, f.dir + "/root/bkt/link");
  fs::create_directory_symlink(outside, f.dir + "/root/bkt/link2");

  for (const char* method : {"GET", "HEAD"}) {
    for (const char* key : {"/bkt/link/secret", "/bkt/link/", "/bkt/link/none/deeper"}) {
      CAPTURE(method);
      CAPTURE(key);
      auto r = f.Call(method, key);
      CHECK(r.status == 404);
      if (std::string(method) == "GET") CHECK(Fixture::Code(r) == "NoSuchKey");
    }
  }
  auto list = f.Call("GET", "/bkt", "list-type=2&prefix=link");
  CHECK(list.status == 200);
  CHECK(list.body.find("secret") == std::string::npos);
  CHECK(list.body.find("<KeyCount>0</KeyCount>") != std::string::npos);
  auto copy = f.SendRaw({.path = "/bkt/dst",
                         .payload_hash = std::string(s3::kEmptyPayloadSha256),
                         .signed_headers = {{"x-amz-copy-source", "/bkt/link/secret"}}});
  CHECK(copy.status == 404);
  CHECK(Fixture::Code(copy) == "NoSuchKey");
  CHECK(f.Call("DELETE", "/bkt/link2/secret").status == 204);
  CHECK(fs::exists(outside + "/secret"));

  // A PUT below the link behaves as below a missing directory: stored in the bucket, never in
  // the link's target.
  CHECK(f.Send("PUT", "/bkt/link/new", "", "mine").status == 200);
  CHECK_FALSE(fs::exists(outside + "/new"));
  CHECK(f.Call("GET", "/bkt/link/new").status == 200);
  CHECK(f.Call("GET", "/bkt/link/secret").status == 404);

  // Multipart completion below a link, likewise.
  fs::create_directory_symlink(outside, f.dir + "/root/bkt/link3");
  auto created = f.Call("POST", "/bkt/link3/mp", "uploads=");
  REQUIRE(created.status == 200);
  const size_t a = created.body.find("<UploadId>") + 10;
  const std::string upload_id = created.body.substr(a, created.body.find("</UploadId>") - a);
  auto part = f.Send("PUT", "/bkt/link3/mp", "partNumber=1&uploadId=" + upload_id, "part one");
  REQUIRE(part.status == 200);
  std::string etag;
  for (const auto& [n, v] : part.headers) {
    if (n == "ETag") etag = v;
  }
  const std::string complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                               etag + "</ETag></Part></CompleteMultipartUpload>";
  auto done = f.Send("POST", "/bkt/link3/mp", "uploadId=" + upload_id, complete);
  CHECK(done.status == 200);
  CHECK_FALSE(fs::exists(outside + "/mp"));
  CHECK(fs::exists(outside + "/secret"));
}

}  // namespace
}  // namespace reelfs::gateway

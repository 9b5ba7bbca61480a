// The reelfs subcommands against the in-memory store: URL parsing, listing output, and cp
// reassembling an object from many ranged GETs byte for byte.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/explain.h"
#include "cli/ranged_reader.h"
#include "cli/s3_url.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"

namespace reelfs::cli {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string TempPath(const char* name) {
  return "/tmp/reelfs-cli-test-" + std::to_string(::getpid()) + "-" + name;
}

// Holds GetObject calls back until a batch is complete, then lets them run in reverse order, so
// ranges complete out of order the way parallel GETs do on a real network. Only GetObject is
// used by ReadRanges; everything else is refused.
class ReversingStore final : public s3::ObjectStore {
 public:
  ReversingStore(s3::FakeObjectStore& inner, size_t batch, size_t total)
      : inner_(inner), batch_(batch), total_(total) {}

  void GetObject(const s3::GetObjectRequest& req, s3::Callback<s3::GetObjectResult> done) override {
    std::vector<std::pair<s3::GetObjectRequest, s3::Callback<s3::GetObjectResult>>> run;
    {
      std::lock_guard lock(mu_);
      held_.emplace_back(req, std::move(done));
      if (held_.size() < batch_ && ++seen_ < total_) return;
      if (held_.size() >= batch_) ++seen_;
      run.swap(held_);
    }
    for (auto it = run.rbegin(); it != run.rend(); ++it) {
      inner_.GetObject(it->first, std::move(it->second));
    }
  }

#define REFUSE(...) \
  { done(Status::Unimplemented("test store")); }
  void ListBuckets(s3::Callback<std::vector<s3::BucketInfo>> done) override
      REFUSE() void CreateBucket(const std::string&, s3::StatusCallback done) override
      REFUSE() void DeleteBucket(const std::string&, s3::StatusCallback done) override
      REFUSE() void ListObjects(const s3::ListObjectsRequest&,
                                s3::Callback<s3::ListObjectsPage> done) override
      REFUSE() void HeadObject(const s3::HeadObjectRequest&,
                               s3::Callback<s3::ObjectInfo> done) override
      REFUSE() void PutObject(const s3::PutObjectRequest&, s3::Callback<std::string> done) override
      REFUSE() void CreateMultipartUpload(const s3::CreateMultipartUploadRequest&,
                                          s3::Callback<std::string> done) override
      REFUSE() void UploadPart(const s3::UploadPartRequest&,
                               s3::Callback<std::string> done) override
      REFUSE() void CompleteMultipartUpload(const s3::CompleteMultipartUploadRequest&,
                                            s3::Callback<std::string> done) override
      REFUSE() void AbortMultipartUpload(const s3::AbortMultipartUploadRequest&,
                                         s3::StatusCallback done) override
      REFUSE() void DeleteObject(const s3::DeleteObjectRequest&, s3::StatusCallback done) override
      REFUSE() void DeleteObjects(const s3::DeleteObjectsRequest&,
                                  s3::Callback<s3::DeleteObjectsResult> done) override
      REFUSE() void CopyObject(const s3::CopyObjectRequest&,
                               s3::Callback<std::string> done) override
      REFUSE() void UploadPartCopy(const s3::UploadPartCopyRequest&,
                                   s3::Callback<std::string> done) override
      REFUSE() void RestoreObject(const s3::RestoreObjectRequest&,
                                  s3::Callback<s3::RestoreOutcome> done) override
      REFUSE() void ListMultipartUploads(const s3::ListMultipartUploadsRequest&,
                                         s3::Callback<s3::ListMultipartUploadsPage> done) override
      REFUSE() void ListParts(const s3::ListPartsRequest&,
                              s3::Callback<s3::ListPartsPage> done) override REFUSE()
#undef REFUSE

          private : s3::FakeObjectStore& inner_;
  const size_t batch_;
  const size_t total_;
  std::mutex mu_;
  size_t seen_ = 0;  // GUARDED_BY(mu_): calls counted towards total_
  std::vector<std::pair<s3::GetObjectRequest, s3::Callback<s3::GetObjectResult>>> held_;
};

std::string Pattern(size_t n) {
  std::string data;
  for (size_t i = 0; i < n; ++i) data += static_cast<char>((i * 7919) % 251);
  return data;
}

TEST_SUITE("cli") {
  TEST_CASE("in-order reads deliver ranges by offset even when they complete out of order") {
    s3::FakeObjectStore fake;
    std::string data = Pattern(9500);  // 10 parts of 1000 bytes, the last one 500
    fake.PutObjectForTest("bkt", "obj", data);
    ReversingStore store(fake, 4, 10);
    auto info = s3::Await<s3::ObjectInfo>(
        [&](auto cb) { fake.HeadObject({.bucket = "bkt", .key = "obj"}, cb); });
    REQUIRE(info.ok());
    std::string out;
    std::vector<uint64_t> offsets;
    Status s = ReadRanges(store, "bkt", "obj", *info,
                          {.concurrency = 4, .part_size = 1000, .in_order = true},
                          [&](uint64_t offset, std::span<const std::byte> bytes) {
                            offsets.push_back(offset);
                            out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
                            return Status::Ok();
                          });
    REQUIRE(s.ok());
    CHECK(out == data);
    REQUIRE(offsets.size() == 10);
    for (size_t i = 0; i < offsets.size(); ++i) CHECK(offsets[i] == i * 1000);
  }

  TEST_CASE("a failed range fails the read after every request in flight has finished") {
    auto fake = std::make_shared<s3::FakeObjectStore>();
    fake->PutObjectForTest("bkt", "obj", Pattern(50000));
    s3::FaultInjectingStore store(fake);
    auto info = s3::Await<s3::ObjectInfo>(
        [&](auto cb) { store.HeadObject({.bucket = "bkt", .key = "obj"}, cb); });
    REQUIRE(info.ok());
    store.FailNext(s3::Operation::kGetObject, 1, Status::Unavailable("injected 503"));
    int consumed = 0;
    Status s = ReadRanges(store, "bkt", "obj", *info, {.concurrency = 3, .part_size = 4096},
                          [&](uint64_t, std::span<const std::byte>) {
                            ++consumed;
                            return Status::Ok();
                          });
    CHECK(s.code() == StatusCode::kUnavailable);
    CHECK(consumed < 13);  // stopped early: 50000 bytes are 13 parts
  }

  TEST_CASE("a consumer error (disk full) stops the read") {
    s3::FakeObjectStore store;
    store.PutObjectForTest("bkt", "obj", Pattern(50000));
    auto info = s3::Await<s3::ObjectInfo>(
        [&](auto cb) { store.HeadObject({.bucket = "bkt", .key = "obj"}, cb); });
    REQUIRE(info.ok());
    Status s = ReadRanges(store, "bkt", "obj", *info, {.concurrency = 2, .part_size = 4096},
                          [](uint64_t offset, std::span<const std::byte>) {
                            return offset >= 8192 ? ErrnoToStatus(ENOSPC, "write") : Status::Ok();
                          });
    CHECK(s.code() == StatusCode::kResourceExhausted);
  }

  TEST_CASE("s3 urls") {
    auto u = ParseS3Url("s3://bucket/a/b c");
    REQUIRE(u.ok());
    CHECK(u->bucket == "bucket");
    CHECK(u->key == "a/b c");
    CHECK(ParseS3Url("s3://bucket")->key.empty());
    CHECK(ParseS3Url("s3://bucket/")->key.empty());
    CHECK_FALSE(ParseS3Url("s3:///key").ok());
    CHECK_FALSE(ParseS3Url("http://bucket/key").ok());
    CHECK_FALSE(ParseS3Url("bucket/key").ok());
  }

  TEST_CASE("cp reassembles an object from concurrent ranged GETs") {
    s3::FakeObjectStore store;
    std::string data;
    for (int i = 0; i < 100000; ++i) data += static_cast<char>((i * 7919) % 251);
    store.PutObjectForTest("b", "dir/obj", data);
    std::string dest = TempPath("cp");
    // 100 000 bytes in 4 KiB parts: 25 ranges, 5 in flight, the last one short.
    CHECK(RunCp(store,
                {.source = "s3://b/dir/obj", .dest = dest, .concurrency = 5, .part_size = 4096}) ==
          0);
    CHECK(ReadFile(dest) == data);
    std::remove(dest.c_str());
  }

  TEST_CASE("cp of a missing object fails and leaves no file") {
    s3::FakeObjectStore store;
    store.CreateBucketForTest("b");
    std::string dest = TempPath("missing");
    CHECK(RunCp(store, {.source = "s3://b/nope", .dest = dest}) == 1);
    CHECK(::access(dest.c_str(), F_OK) != 0);
    CHECK(::access((dest + ".reelfs-partial").c_str(), F_OK) != 0);
    CHECK(RunCp(store, {.source = "s3://b", .dest = dest}) == 2);
  }

  TEST_CASE("ls pages through a listing") {
    s3::FakeObjectStore store;
    for (int i = 0; i < 2500; ++i) store.PutObjectForTest("b", "k/" + std::to_string(i), "x");
    store.PutObjectForTest("b", "k/sub/inner", "y");
    std::string out = TempPath("ls");
    // Redirect stdout to a file for the duration of the listing.
    std::fflush(stdout);
    int saved = ::dup(1);
    FILE* f = std::fopen(out.c_str(), "w");
    REQUIRE(f != nullptr);
    ::dup2(::fileno(f), 1);
    int rc = RunLs(store, {.url = "s3://b/k/"});
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
    std::fclose(f);
    CHECK(rc == 0);
    std::string listing = ReadFile(out);
    std::remove(out.c_str());
    size_t lines = 0;
    for (char c : listing) lines += c == '\n';
    CHECK(lines == 2501);  // 2500 objects + one PRE line, across three pages
    CHECK(listing.find("PRE sub/") != std::string::npos);
    CHECK(listing.find(" 1 1999\n") != std::string::npos);
  }
}

TEST_CASE("cp of an object into a directory writes dir/NAME, as cp and aws s3 cp do") {
  s3::FakeObjectStore store;
  store.PutObjectForTest("b", "deep/path/obj.bin", "payload");
  const std::string dir = TempPath("cpdir");
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  CHECK(RunCp(store, {.source = "s3://b/deep/path/obj.bin", .dest = dir}) == 0);
  CHECK(ReadFile(dir + "/obj.bin") == "payload");
  std::remove((dir + "/obj.bin").c_str());
  CHECK(RunCp(store, {.source = "s3://b/deep/path/obj.bin", .dest = dir + "/"}) == 0);
  CHECK(ReadFile(dir + "/obj.bin") == "payload");
  std::remove((dir + "/obj.bin").c_str());
  // A file name stays the file name; a key with no last component has nothing to write.
  CHECK(DownloadPath(dir + "/x", "a/b").value() == dir + "/x");
  CHECK(DownloadPath("out/", "k").value() == "out/k");
  CHECK_FALSE(DownloadPath(dir, "a/").ok());
  ::rmdir(dir.c_str());
}

TEST_CASE("errors are said for a person: what is wrong and what to do, with the server's ids") {
  const S3Subject key{.bucket = "b", .key = "k/x", .endpoint = "http://gw:7070"};
  const S3Subject bucket{.bucket = "b", .key = "", .endpoint = "http://gw:7070"};
  auto s3_error = [](StatusCode code, int http, std::string s3_code) {
    return Status(
        code, "HeadObject b/k/x: HTTP",
        StatusDetail{.http_status = http, .s3_code = std::move(s3_code), .request_id = "R1"});
  };
  CHECK(Explain(s3_error(StatusCode::kNotFound, 404, ""), key) ==
        "no such key s3://b/k/x (request-id R1)");
  CHECK(Explain(s3_error(StatusCode::kNotFound, 404, "NoSuchBucket"), bucket) ==
        "bucket 'b' does not exist at http://gw:7070 (NoSuchBucket, request-id R1)");
  const std::string sig =
      Explain(s3_error(StatusCode::kUnauthenticated, 403, "SignatureDoesNotMatch"), bucket);
  CHECK(sig.find("refused the secret key") != std::string::npos);
  CHECK(sig.find("SignatureDoesNotMatch") != std::string::npos);
  CHECK(Explain(s3_error(StatusCode::kUnauthenticated, 403, "InvalidAccessKeyId"), bucket)
            .find("does not know this access key id") != std::string::npos);
  CHECK(Explain(s3_error(StatusCode::kPermissionDenied, 403, "AccessDenied"), key)
            .starts_with("access denied to s3://b/k/x (AccessDenied"));
  const Status archived(StatusCode::kFailedPrecondition, StatusReason::kArchived, "GetObject",
                        StatusDetail{.http_status = 403, .s3_code = "InvalidObjectState"});
  CHECK(Explain(archived, key).find("archived on tape") != std::string::npos);
  CHECK(Explain(archived, key).find("reelfs stage s3://b/k/x") != std::string::npos);
  const Status refused(StatusCode::kUnavailable, "ListObjectsV2 b: Couldn't connect to server");
  CHECK(Explain(refused, bucket) ==
        "cannot reach http://gw:7070: ListObjectsV2 b: Couldn't connect to server");
  const Status untrusted(StatusCode::kFailedPrecondition, StatusReason::kTlsUntrusted,
                         "the server's TLS certificate was not accepted: unable to get issuer");
  CHECK(Explain(untrusted, bucket).find("trust its CA with --ca-bundle FILE, AWS_CA_BUNDLE") !=
        std::string::npos);
  // A local error is not the server's "no such key", and no code name ("NOT_FOUND") is shown.
  const Status local = ErrnoToStatus(ENOENT, "open /x/y.reelfs-partial");
  CHECK(Explain(local, key).find("no such key") == std::string::npos);
  CHECK(Explain(local, key).find("NOT_FOUND") == std::string::npos);
  CHECK(Explain(local, key).find("open /x/y.reelfs-partial") != std::string::npos);
}

}  // namespace
}  // namespace reelfs::cli

// The reelfs subcommands against the in-memory store: URL parsing, listing output, and cp
// reassembling an object from many ranged GETs byte for byte.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "cli/commands.h"
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

}  // namespace
}  // namespace reelfs::cli

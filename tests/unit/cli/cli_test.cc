// The reelfs subcommands against the in-memory store: URL parsing, listing output, and cp
// reassembling an object from many ranged GETs byte for byte.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "cli/commands.h"
#include "cli/s3_url.h"
#include "s3/fake/fake_object_store.h"

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

TEST_SUITE("cli") {
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
                {.url = "s3://b/dir/obj", .dest = dest, .concurrency = 5, .part_size = 4096}) == 0);
    CHECK(ReadFile(dest) == data);
    std::remove(dest.c_str());
  }

  TEST_CASE("cp of a missing object fails and leaves no file") {
    s3::FakeObjectStore store;
    store.CreateBucketForTest("b");
    std::string dest = TempPath("missing");
    CHECK(RunCp(store, {.url = "s3://b/nope", .dest = dest}) == 1);
    CHECK(::access(dest.c_str(), F_OK) != 0);
    CHECK(::access((dest + ".reelfs-partial").c_str(), F_OK) != 0);
    CHECK(RunCp(store, {.url = "s3://b", .dest = dest}) == 2);
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

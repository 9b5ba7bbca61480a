// cli/mount_path: the user.reelfs.mount JSON, s3:// URLs as stage targets, the mount-root walk
// and key mapping, and the "not under a reelfs mount" error for a plain directory.
#include "cli/mount_path.h"

#include <unistd.h>

#include <map>

#include <doctest/doctest.h>

namespace reelfs::cli {
namespace {

TEST_CASE("user.reelfs.mount JSON") {
  auto info = ParseMountInfo(
      R"({"version":1,"endpoint":"http://127.0.0.1:7070","bucket":"b","prefix":"p/",)"
      R"("ledger":"/root/.local/state/reelfs/ledger.sqlite"})");
  REQUIRE(info.ok());
  CHECK(info->endpoint == "http://127.0.0.1:7070");
  CHECK(info->bucket == "b");
  CHECK(info->prefix == "p/");
  CHECK(info->ledger == "/root/.local/state/reelfs/ledger.sqlite");

  SUBCASE("whitespace, escapes, unknown members and member order") {
    auto other =
        ParseMountInfo(" {\n \"bucket\" : \"b\\u00e9\\\"q\", \"future\": [1], \"version\": 1 }\n");
    // A nested value is refused (the contract has none; a reader must not guess).
    CHECK_FALSE(other.ok());
    other = ParseMountInfo(
        " {\n \"bucket\" : \"b\\u00e9\\\"q\", \"future\": true, \"n\": -1.5e3, \"version\": 1 }\n");
    REQUIRE(other.ok());
    CHECK(other->bucket == "b\xc3\xa9\"q");
    CHECK(other->prefix.empty());
    CHECK(other->endpoint.empty());
  }
  SUBCASE("refused") {
    CHECK(ParseMountInfo("").status().code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(ParseMountInfo("{\"version\":1}").ok());                   // no bucket
    CHECK_FALSE(ParseMountInfo("{\"version\":2,\"bucket\":\"b\"}").ok());  // newer
    CHECK_FALSE(ParseMountInfo("{\"bucket\":\"b\"}").ok());                // no version
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"b\",\"prefix\":\"p\"}").ok());
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"b\"} x").ok());      // trailing
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"b\"").ok());         // cut
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"\\ud800\"}").ok());  // lone half
    CHECK_FALSE(ParseMountInfo("{\"version\":\"1\",\"bucket\":\"b\"}").ok());    // not a number
    CHECK_FALSE(ParseMountInfo("{\"version\":1.5,\"bucket\":\"b\"}").ok());
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":7}").ok());  // not a string
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"b\",\"ledger\":null}").ok());
    CHECK_FALSE(ParseMountInfo("[1]").ok());
    CHECK_FALSE(ParseMountInfo("{\"version\":1,\"bucket\":\"b\xff\"}").ok());  // not UTF-8
  }
  SUBCASE("what the mount writes reads back") {
    auto back = ParseMountInfo(
        R"({"version":1,"endpoint":"","bucket":"b","prefix":"a\"q\\/","ledger":"/l\n"})");
    REQUIRE(back.ok());
    CHECK(back->prefix == "a\"q\\/");
    CHECK(back->ledger == "/l\n");
  }
}

TEST_CASE("s3:// URLs") {
  auto key = ResolveS3Url("s3://b/dir/f.bin", false);
  REQUIRE(key.ok());
  CHECK(key->bucket == "b");
  CHECK(key->key == "dir/f.bin");
  CHECK_FALSE(key->is_prefix);
  CHECK_FALSE(key->under_mount);

  auto slash = ResolveS3Url("s3://b/dir/", false);
  REQUIRE(slash.ok());
  CHECK(slash->is_prefix);
  CHECK(slash->key == "dir/");

  auto recursive = ResolveS3Url("s3://b/dir", true);
  REQUIRE(recursive.ok());
  CHECK(recursive->is_prefix);
  CHECK(recursive->key == "dir/");

  auto bucket = ResolveS3Url("s3://b", false);
  REQUIRE(bucket.ok());
  CHECK(bucket->is_prefix);
  CHECK(bucket->key.empty());

  CHECK_FALSE(ResolveS3Url("http://b/k", false).ok());
  CHECK_FALSE(ResolveS3Url("s3:///k", false).ok());
}

TEST_CASE("the mount root is the topmost ancestor on the same device") {
  const std::map<std::string, uint64_t> devices = {
      {"/", 1}, {"/mnt", 1}, {"/mnt/data", 7}, {"/mnt/data/a", 7}, {"/mnt/data/a/b.bin", 7}};
  auto device_of = [&](const std::string& p) -> std::optional<uint64_t> {
    auto it = devices.find(p);
    return it == devices.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  };
  CHECK(FindMountRoot("/mnt/data/a/b.bin", device_of) == "/mnt/data");
  CHECK(FindMountRoot("/mnt/data", device_of) == "/mnt/data");
  CHECK(FindMountRoot("/mnt", device_of) == "/");
  CHECK(FindMountRoot("/nowhere", device_of) == "/nowhere");  // cannot stat: itself
}

TEST_CASE("keys under a mount") {
  MountInfo m;
  m.endpoint = "http://127.0.0.1:9";
  m.bucket = "b";
  m.prefix = "p/";
  m.ledger = "/l.sqlite";
  ResolvedPath file = KeyUnderMount(m, "a/b.bin", false);
  CHECK(file.key == "p/a/b.bin");
  CHECK_FALSE(file.is_prefix);
  CHECK(file.endpoint == "http://127.0.0.1:9");
  CHECK(file.ledger == "/l.sqlite");
  CHECK(file.under_mount);
  ResolvedPath dir = KeyUnderMount(m, "a", true);
  CHECK(dir.key == "p/a/");
  CHECK(dir.is_prefix);
  ResolvedPath root = KeyUnderMount(m, "", true);
  CHECK(root.key == "p/");
  CHECK(root.is_prefix);
  m.prefix = "";
  CHECK(KeyUnderMount(m, "", true).key.empty());
  CHECK(KeyUnderMount(m, "x", true).key == "x/");
}

TEST_CASE("a path outside any reelfs mount is a clear error") {
  char dir[] = "/tmp/reelfs-mount-path-test-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  auto r = ResolvePath(dir, false);
  CHECK(r.status().code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(r.status().message()).find("not under a reelfs mount") != std::string::npos);
  ::rmdir(dir);
  CHECK(ResolvePath(std::string(dir) + "/missing", false).status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace reelfs::cli

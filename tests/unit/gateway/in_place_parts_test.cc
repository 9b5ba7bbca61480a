// Multipart parts written in place in the upload's data file (gateway/store/fs_root.h): the
// whole, ordered upload completes by renaming that file (same inode, no copy); a retried part,
// a part of another size or a subset listed in the COMPLETE fall back to copying, and every
// object is compared with what was sent.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "gateway/store/fs_root.h"
#include "gateway/store/store.h"
#include "s3/protocol/crypto.h"
#include "tests/unit/gateway/tmp_leftovers.h"

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  Fixture() {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-inplace.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    StoreOptions options;
    options.min_part_size = 4;  // the slot is fixed by the first part of at least 4 bytes
    auto opened = Store::Open(dir + "/root", options);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    REQUIRE(store->CreateBucket("bkt").ok());
    auto id = store->CreateUpload("bkt", "obj", PutOptions{});
    REQUIRE(id.ok());
    auto got = store->GetUpload("bkt", "obj", *id);
    REQUIRE(got.ok());
    upload = *got;
  }
  ~Fixture() {
    store.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string UploadDir() const { return dir + "/root/.reelfs-gateway/uploads/" + upload.id; }

  // Sends part n with `content` (declared size = its length unless given) and returns whether it
  // went in place; `publish` false drops it as a client dying mid-body would.
  bool Part(int n, const std::string& content, bool publish = true,
            std::optional<uint64_t> declared = std::nullopt) {
    auto target = store->CreatePartTarget(upload.id, n, declared.value_or(content.size()));
    REQUIRE(target.ok());
    const bool in_place = target->is_region();
    REQUIRE(target->Write(content).ok());
    if (publish) {
      REQUIRE(store->PutPart(upload, n, *target, s3::Md5Hex(content)).ok());
      etags[n] = s3::Md5Hex(content);
    }
    return in_place;
  }
  std::vector<s3::CompletedPart> List(std::vector<int> numbers) {
    std::vector<s3::CompletedPart> out;
    for (int n : numbers) out.push_back({n, etags[n]});
    return out;
  }

  std::string dir;
  std::unique_ptr<Store> store;
  UploadRecord upload;
  std::map<int, std::string> etags;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ino_t Inode(const std::string& path) {
  struct stat sb {};
  REQUIRE(::stat(path.c_str(), &sb) == 0);
  return sb.st_ino;
}

TEST_CASE("in place: parts out of order, completed by renaming the data file") {
  Fixture f;
  CHECK(f.Part(2, "bbbb"));  // the first part to arrive fixes the slot at 4 bytes
  CHECK(f.Part(3, "cc"));
  CHECK(f.Part(1, "aaaa"));
  const ino_t data = Inode(f.UploadDir() + "/data");
  auto listed = f.store->ListUploadParts(f.upload, 0, 1000);
  REQUIRE(listed.ok());
  REQUIRE(listed->parts.size() == 3);
  CHECK(listed->parts[2].size == 2);
  CHECK(listed->parts[0].etag == s3::Md5Hex("aaaa"));
  auto rec = f.store->CompleteUpload(f.upload, f.List({1, 2, 3}));
  REQUIRE(rec.ok());
  CHECK(rec->size == 10);
  CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaabbbbcc");
  CHECK(Inode(f.dir + "/root/bkt/obj") == data);  // renamed, not copied
  CHECK_FALSE(fs::exists(f.UploadDir()));
  CHECK(testing::TmpLeftovers(f.store->fs().tmp_path()).empty());
}

TEST_CASE(
    "in place: a retried part gets its own file, which wins; a dropped retry changes nothing") {
  Fixture f;
  CHECK(f.Part(1, "aaaa"));
  CHECK(f.Part(2, "bbbb"));
  CHECK(f.Part(3, "cc"));
  CHECK_FALSE(f.Part(2, "XY", /*publish=*/false, 4));  // cut short: never stored
  CHECK_FALSE(f.Part(1, "AAAA"));                      // stored again: its own file
  auto rec = f.store->CompleteUpload(f.upload, f.List({1, 2, 3}));
  REQUIRE(rec.ok());
  CHECK(ReadFile(f.dir + "/root/bkt/obj") == "AAAAbbbbcc");
}

TEST_CASE("in place: parts of other sizes, small first parts and subsets are copied") {
  SUBCASE("a part larger than the slot goes to a file") {
    Fixture f;
    CHECK(f.Part(1, "aaaa"));
    CHECK_FALSE(f.Part(2, "bbbbbb"));
    CHECK(f.Part(3, "c"));
    REQUIRE(f.store->CompleteUpload(f.upload, f.List({1, 2, 3})).ok());
    CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaabbbbbbc");
  }
  SUBCASE("a short middle part stays in its region, and the COMPLETE copies around the gap") {
    Fixture f;
    CHECK(f.Part(1, "aaaaa"));
    CHECK(f.Part(2, "bbbb"));  // under the slot of 5, at least the minimum part size
    CHECK(f.Part(3, "cc"));
    REQUIRE(f.store->CompleteUpload(f.upload, f.List({1, 2, 3})).ok());
    CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaaabbbbcc");
  }
  SUBCASE("a part under the minimum before any slot goes to a file") {
    Fixture f;
    CHECK_FALSE(f.Part(2, "bb"));
    CHECK(f.Part(1, "aaaa"));
    REQUIRE(f.store->CompleteUpload(f.upload, f.List({1, 2})).ok());
    CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaabb");
  }
  SUBCASE("a COMPLETE naming a subset keeps only those parts") {
    Fixture f;
    CHECK(f.Part(1, "aaaa"));
    CHECK(f.Part(2, "bbbb"));
    CHECK(f.Part(3, "cccc"));
    REQUIRE(f.store->CompleteUpload(f.upload, f.List({1, 3})).ok());
    CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaacccc");
  }
}

TEST_CASE("in place: a region refuses bytes past its slot") {
  Fixture f;
  auto target = f.store->CreatePartTarget(f.upload.id, 1, 4);
  REQUIRE(target.ok());
  REQUIRE(target->is_region());
  CHECK(target->Write("aaa").ok());
  CHECK(target->Write("aa").detail().s3_code == "IncompleteBody");
}

TEST_CASE("in place: a region dropped unstored gives its blocks back") {
  // On a full disk those blocks are what the catalog needs to abort the upload (e2e writes.sh).
  Fixture f;
  CHECK(f.Part(1, std::string(1 << 20, 'a')));
  auto blocks = [&] {
    struct stat sb {};
    REQUIRE(::stat((f.UploadDir() + "/data").c_str(), &sb) == 0);
    return sb.st_blocks;
  };
  const auto stored = blocks();
  CHECK(f.Part(2, std::string(1 << 20, 'b'), /*publish=*/false));  // in place, then dropped
  CHECK(blocks() == stored);
  REQUIRE(f.store->CompleteUpload(f.upload, f.List({1})).ok());
  CHECK(ReadFile(f.dir + "/root/bkt/obj") == std::string(1 << 20, 'a'));
}

TEST_CASE("in place: a COMPLETE whose publish fails leaves the upload completable") {
  Fixture f;
  CHECK(f.Part(1, "aaaa"));
  CHECK(f.Part(2, "bb"));
  // obj/ is a directory holding another object: publishing "obj" fails.
  auto tmp = f.store->fs().CreateTmp("t");
  REQUIRE(tmp.ok());
  REQUIRE(tmp->Write("x").ok());
  REQUIRE(f.store->Put("bkt", "obj/inner", *tmp, s3::Md5Hex("x"), PutOptions{}).ok());
  CHECK_FALSE(f.store->CompleteUpload(f.upload, f.List({1, 2})).ok());
  REQUIRE(f.store->Delete("bkt", "obj/inner").ok());
  auto rec = f.store->CompleteUpload(f.upload, f.List({1, 2}));
  REQUIRE(rec.ok());
  CHECK(ReadFile(f.dir + "/root/bkt/obj") == "aaaabb");
}

TEST_CASE("in place: hostile upload ids are refused") {
  Fixture f;
  for (const std::string id : {"../../x", "..", "a/b"}) {
    CAPTURE(id);
    CHECK_FALSE(f.store->fs().CreatePartInPlace(id, 1, 4, 4).ok());
    CHECK_FALSE(f.store->fs().LocatePart(id, 1).ok());
    CHECK_FALSE(f.store->fs().StatPart(id, 1).ok());
    CHECK_FALSE(f.store->fs().TakeUploadData(id, 4).ok());
  }
}

}  // namespace
}  // namespace reelfs::gateway

// `reelfs cp` uploads against the in-memory store: one PUT under a part, multipart above it,
// trees (nested directories, symbolic links followed or skipped, a cycle, a broken link, a
// FIFO), existing objects refused without --overwrite, a failed part aborting its upload, usage
// errors, and the progress line's text. Every object is compared byte for byte with its source.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/local_sources.h"
#include "cli/progress.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/part_sender.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"

namespace fs = std::filesystem;

namespace reelfs::cli {
namespace {

constexpr uint64_t kPart = 5ull << 20;

std::string Pattern(size_t n, unsigned seed) {
  std::string data(n, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    data[i] = static_cast<char>(x);
  }
  return data;
}

void WriteFile(const fs::path& path, const std::string& data) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

// A private directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "reelfs-cp-upload-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

Result<std::string> Object(s3::ObjectStore& store, const std::string& key) {
  std::string out;
  s3::GetObjectRequest req{.bucket = "b", .key = key};
  req.sink = [&out](std::span<const std::byte> chunk) {
    out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return Status::Ok();
  };
  auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { store.GetObject(req, cb); });
  if (!r.ok()) return r.status();
  return out;
}

std::vector<std::string> Keys(s3::ObjectStore& store) {
  auto page = s3::Await<s3::ListObjectsPage>(
      [&](auto cb) { store.ListObjects({.bucket = "b", .max_keys = 1000}, cb); });
  REQUIRE(page.ok());
  std::vector<std::string> keys;
  for (const auto& o : page->objects) keys.push_back(o.key);
  return keys;
}

// The transport `--rdma` opens (cli/rdma_open.h), with the store's sender behind a counter: what
// the upload hands its sender is what a channel's sender would get.
class CountingSender final : public fuse::PartSender {
 public:
  explicit CountingSender(std::shared_ptr<s3::ObjectStore> store)
      : inner_(fuse::CreateStorePartSender(std::move(store))) {}
  void Send(const fuse::PartPayload& payload, s3::Callback<fuse::PartSent> done) override {
    ++sends;
    bytes += payload.body.size();
    inner_->Send(payload, std::move(done));
  }
  fuse::PutCounters counters() const override { return inner_->counters(); }
  std::atomic<int> sends{0};
  std::atomic<uint64_t> bytes{0};

 private:
  std::shared_ptr<fuse::PartSender> inner_;
};

CpArgs Upload(const std::string& source, const std::string& dest) {
  return {.source = source, .dest = dest, .concurrency = 3, .part_size = kPart};
}

TEST_SUITE("cp upload") {
  TEST_CASE("a file under one part is one PutObject; a larger one a multipart upload") {
    TempDir dir;
    auto store = std::make_shared<s3::FakeObjectStore>();
    store->CreateBucketForTest("b");
    const std::string small = Pattern(kPart - 1, 1);
    const std::string big = Pattern(2 * kPart + 12345, 2);
    WriteFile(dir.path / "small", small);
    WriteFile(dir.path / "big", big);
    WriteFile(dir.path / "empty", "");

    CHECK(RunCp(*store, Upload((dir.path / "small").string(), "s3://b/s.bin")) == 0);
    CHECK(store->CallCount(s3::Operation::kPutObject) == 1);
    CHECK(store->CallCount(s3::Operation::kCreateMultipartUpload) == 0);
    CHECK(Object(*store, "s.bin").value() == small);

    CHECK(RunCp(*store, Upload((dir.path / "big").string(), "s3://b/dir/")) == 0);
    CHECK(store->CallCount(s3::Operation::kCreateMultipartUpload) == 1);
    CHECK(store->CallCount(s3::Operation::kUploadPart) == 3);
    CHECK(Object(*store, "dir/big").value() == big);  // a prefix gets the file's name

    CHECK(RunCp(*store, Upload((dir.path / "empty").string(), "s3://b/e")) == 0);
    CHECK(Object(*store, "e").value().empty());
  }

  TEST_CASE("a tree: every regular file under its path, links followed, problems reported") {
    TempDir dir;
    const fs::path src = dir.path / "src";
    WriteFile(src / "a b" / "c+d%e.txt", "one");
    WriteFile(src / "a b" / "deep" / "x" / "y" / "z.bin", Pattern(kPart + 7, 3));
    WriteFile(src / "\xc3\xa9t\xc3\xa9.txt", "unicode");
    WriteFile(dir.path / "outside" / "o.txt", "outside");
    fs::create_directories(src / "empty-dir");
    fs::create_symlink(dir.path / "outside" / "o.txt", src / "link-to-file");
    fs::create_directory_symlink(dir.path / "outside", src / "link-to-dir");
    fs::create_directory_symlink(src / "a b", src / "a b" / "deep" / "loop");  // a cycle
    fs::create_symlink(dir.path / "nowhere", src / "broken");
    REQUIRE(::mkfifo((src / "fifo").c_str(), 0644) == 0);

    auto store = std::make_shared<s3::FakeObjectStore>();
    store->CreateBucketForTest("b");
    CpArgs args = Upload(src.string(), "s3://b/pre");
    args.recursive = true;
    // The cycle, the broken link and the FIFO are not uploaded: exit 1, the rest is there.
    CHECK(RunCp(*store, args) == 1);
    std::vector<std::string> want = {"pre/a b/c+d%e.txt", "pre/a b/deep/x/y/z.bin",
                                     "pre/link-to-dir/o.txt", "pre/link-to-file",
                                     "pre/\xc3\xa9t\xc3\xa9.txt"};
    std::sort(want.begin(), want.end());
    CHECK(Keys(*store) == want);
    CHECK(Object(*store, "pre/a b/deep/x/y/z.bin").value() == Pattern(kPart + 7, 3));
    CHECK(Object(*store, "pre/link-to-file").value() == "outside");

    // Without following links: the links are skipped with a note, and that is not an error.
    fs::remove(src / "broken");
    fs::remove(src / "fifo");
    auto store2 = std::make_shared<s3::FakeObjectStore>();
    store2->CreateBucketForTest("b");
    args.follow_symlinks = false;
    CHECK(RunCp(*store2, args) == 0);
    CHECK(Keys(*store2) == std::vector<std::string>{"pre/a b/c+d%e.txt", "pre/a b/deep/x/y/z.bin",
                                                    "pre/\xc3\xa9t\xc3\xa9.txt"});
  }

  TEST_CASE("existing objects: refused without --overwrite, replaced with it") {
    TempDir dir;
    auto store = std::make_shared<s3::FakeObjectStore>();
    store->PutObjectForTest("b", "k", "old");
    store->PutObjectForTest("b", "t/x", "old x");
    WriteFile(dir.path / "f", "new");
    WriteFile(dir.path / "t" / "x", "new x");
    WriteFile(dir.path / "t" / "y", "new y");

    CHECK(RunCp(*store, Upload((dir.path / "f").string(), "s3://b/k")) == 1);
    CHECK(Object(*store, "k").value() == "old");
    CpArgs tree = Upload((dir.path / "t").string(), "s3://b/t/");
    tree.recursive = true;
    CHECK(RunCp(*store, tree) == 1);  // x refused, y uploaded
    CHECK(Object(*store, "t/x").value() == "old x");
    CHECK(Object(*store, "t/y").value() == "new y");

    CpArgs over = Upload((dir.path / "f").string(), "s3://b/k");
    over.overwrite = true;
    CHECK(RunCp(*store, over) == 0);
    CHECK(Object(*store, "k").value() == "new");
    tree.overwrite = true;
    CHECK(RunCp(*store, tree) == 0);
    CHECK(Object(*store, "t/x").value() == "new x");
  }

  TEST_CASE("a part that fails aborts the multipart upload: exit 1, no object") {
    TempDir dir;
    auto fake = std::make_shared<s3::FakeObjectStore>();
    fake->CreateBucketForTest("b");
    s3::FaultInjectingStore store(fake);
    WriteFile(dir.path / "f", Pattern(3 * kPart, 4));
    WriteFile(dir.path / "g", Pattern(100, 5));
    store.FailNext(s3::Operation::kUploadPart, 1,
                   Status(StatusCode::kInternal, "injected: part rejected"));
    CHECK(RunCp(store, Upload((dir.path / "f").string(), "s3://b/f")) == 1);
    CHECK(fake->CallCount(s3::Operation::kAbortMultipartUpload) == 1);
    CHECK(fake->CallCount(s3::Operation::kCompleteMultipartUpload) == 0);
    CHECK(Object(*fake, "f").status().code() == StatusCode::kNotFound);

    // Bad credentials stop the copy: the first failure, the other files are not started.
    const Status unauthenticated(StatusCode::kUnauthenticated, "injected: SignatureDoesNotMatch");
    store.FailNext(s3::Operation::kPutObject, 100, unauthenticated);
    store.FailNext(s3::Operation::kCreateMultipartUpload, 100, unauthenticated);
    CpArgs tree = Upload(dir.path.string(), "s3://b/t/");
    tree.recursive = true;
    tree.files_in_flight = 1;
    tree.overwrite = true;
    WriteFile(dir.path / "h", "h");
    CHECK(RunCp(store, tree) == 1);
    CHECK(store.InjectedCount(s3::Operation::kPutObject) +
              store.InjectedCount(s3::Operation::kCreateMultipartUpload) ==
          1);
    CHECK(Keys(*fake).empty());
  }

  TEST_CASE("usage errors exit 2, a missing file 1, and nothing is uploaded") {
    TempDir dir;
    s3::FakeObjectStore store;
    store.CreateBucketForTest("b");
    WriteFile(dir.path / "f", "x");
    CHECK(RunCp(store, Upload((dir.path / "nope").string(), "s3://b/k")) == 1);
    CHECK(RunCp(store, Upload(dir.path.string(), "s3://b/k")) == 2);  // a directory without -r
    CpArgs r = Upload((dir.path / "f").string(), "s3://b/k");
    r.recursive = true;
    CHECK(RunCp(store, r) == 2);  // -r on a file
    CpArgs tiny = Upload((dir.path / "f").string(), "s3://b/k");
    tiny.part_size = 1 << 20;
    CHECK(RunCp(store, tiny) == 2);                        // parts under 5 MiB
    CHECK(RunCp(store, Upload("-", "s3://b/dir/")) == 2);  // stdin has no name
    CHECK(RunCp(store, Upload("s3://b/x", "s3://b/y")) == 2);
    CHECK(RunCp(store, Upload((dir.path / "f").string(), "s3:///k")) == 2);
    CHECK(Keys(store).empty());
  }

  TEST_CASE("--rdma: every part through the transport's sender; a transport that cannot open") {
    TempDir dir;
    auto store = std::make_shared<s3::FakeObjectStore>();
    store->CreateBucketForTest("b");
    const std::string big = Pattern(2 * kPart + 12345, 7);
    const std::string small = Pattern(3000, 8);
    WriteFile(dir.path / "t" / "big", big);
    WriteFile(dir.path / "t" / "small", small);
    auto sender = std::make_shared<CountingSender>(store);
    int opened = 0;
    CpArgs args = Upload((dir.path / "t").string(), "s3://b/up/");
    args.recursive = true;
    args.open_rdma = [&]() -> Result<UploadTransport> {
      ++opened;
      return UploadTransport{.pool = fuse::CreateHeapBufferPool(64ull << 20), .sender = sender};
    };
    CHECK(RunCp(*store, args) == 0);
    CHECK(opened == 1);
    CHECK(sender->sends.load() == 4);  // three parts and one PutObject
    CHECK(sender->bytes.load() == big.size() + small.size());
    CHECK(store->CallCount(s3::Operation::kUploadPart) == 3);
    CHECK(Object(*store, "up/big").value() == big);
    CHECK(Object(*store, "up/small").value() == small);

    // Built without rdma-core: exit 2 before anything is sent.
    CpArgs refused = Upload((dir.path / "t" / "small").string(), "s3://b/other");
    refused.open_rdma = []() -> Result<UploadTransport> {
      return Status::FailedPrecondition("--rdma: reelfs was built without rdma-core (test)");
    };
    CHECK(RunCp(*store, refused) == 2);
    CHECK_FALSE(Object(*store, "other").ok());
    // A download with --rdma is a usage error, and writes no file.
    CpArgs down{.source = "s3://b/up/small", .dest = (dir.path / "down").string()};
    down.open_rdma = args.open_rdma;
    CHECK(RunCp(*store, down) == 2);
    CHECK_FALSE(fs::exists(dir.path / "down"));
    CHECK(opened == 1);
  }

  TEST_CASE("keys of single files and validity of names") {
    TempDir dir;
    WriteFile(dir.path / "n.txt", "x");
    auto one = ListLocalSources((dir.path / "n.txt").string(), "", {});
    REQUIRE(one.ok());
    CHECK(one->sources.at(0).key == "n.txt");
    CHECK(ListLocalSources((dir.path / "n.txt").string(), "a/b", {})->sources.at(0).key == "a/b");
    CHECK(IsValidUtf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK_FALSE(IsValidUtf8("\xff"));
    CHECK_FALSE(IsValidUtf8("\xc0\xaf"));      // overlong '/'
    CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));  // a surrogate
    CHECK_FALSE(IsValidUtf8("\xe2\x82"));      // cut short
  }

  TEST_CASE("the progress line") {
    ProgressSnapshot s{.bytes = 1ull << 30,
                       .total_bytes = 4ull << 30,
                       .files_done = 3,
                       .files = 200,
                       .seconds = 2};
    CHECK(FormatProgress(s) == "1.0 GiB / 4.0 GiB   25%  512.0 MiB/s  ETA 0:06  3/200 files");
    s.total_known = false;
    s.files = 1;
    CHECK(FormatProgress(s) == "1.0 GiB  512.0 MiB/s");
    CHECK(FormatBytes(512) == "512 B");
    CHECK(FormatBytes(1536) == "1.5 KiB");
  }
}

}  // namespace
}  // namespace reelfs::cli

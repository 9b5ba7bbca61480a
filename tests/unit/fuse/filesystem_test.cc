// FileSystem against the in-memory FakeObjectStore: names and directories, lookup counting,
// caches (with a FakeClock), read-only opens, error propagation, and a reference-model test.
#include "fuse/core/filesystem.h"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "fuse/core/dir_listing.h"
#include "fuse/core/name_rules.h"
#include "fuse/lowlevel/errno_map.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/misbehaving_store.h"

namespace reelfs::fuse {
namespace {

using s3::Await;
using s3::FakeObjectStore;
using s3::Operation;
using testing::MisbehavingStore;

constexpr char kBucket[] = "bkt";

// The errno the kernel would get (fuse/lowlevel/errno_map.h: the reason decides it).
int Errno(const Status& s) { return StatusToErrno(s); }

// Lookups answer from a listing of their directory by default (lookup_listing_test.cc); tests of
// the per-name HEAD+LIST path pass lookup_listing_pages = 0.
struct Fixture {
  explicit Fixture(std::string prefix = "", std::shared_ptr<s3::ObjectStore> store_override = {},
                   uint32_t lookup_listing_pages = MountOptions{}.lookup_listing_pages)
      : fake(std::make_shared<FakeObjectStore>()) {
    fake->CreateBucketForTest(kBucket);
    MountOptions options;
    options.bucket = kBucket;
    options.prefix = std::move(prefix);
    options.metadata_ttl = std::chrono::seconds(100);
    options.negative_ttl = std::chrono::seconds(10);
    options.uid = 1234;
    options.gid = 5678;
    options.lookup_listing_pages = lookup_listing_pages;
    store = store_override ? store_override : fake;
    fs = CreateFileSystem(store, options, CreateHeapBufferPool(),
                          std::make_shared<MemoryBudget>(64ull << 20), clock);
  }
  std::string Put(const std::string& key, std::string data = "x") {
    return fake->PutObjectForTest(kBucket, key, std::move(data));
  }
  Result<Entry> Lookup(InodeId parent, std::string_view name) {
    return Await<Entry>([&](auto cb) { fs->Lookup(parent, name, cb); });
  }
  Result<Attributes> GetAttr(InodeId ino) {
    return Await<Attributes>([&](auto cb) { fs->GetAttr(ino, cb); });
  }
  Result<uint64_t> OpenDir(InodeId ino) {
    return Await<uint64_t>([&](auto cb) { fs->OpenDir(ino, cb); });
  }
  Result<std::vector<DirEntry>> ReadDir(InodeId ino, uint64_t dh, uint64_t off, size_t max,
                                        bool plus) {
    return Await<std::vector<DirEntry>>([&](auto cb) { fs->ReadDir(ino, dh, off, max, plus, cb); });
  }
  Result<OpenedFile> Open(InodeId ino, int flags = O_RDONLY) {
    return Await<OpenedFile>([&](auto cb) { fs->Open(ino, flags, 0, cb); });
  }
  // All names of directory `ino` (one OpenDir, plain READDIR), without "." and "..".
  std::vector<std::string> Names(InodeId ino) {
    auto dh = OpenDir(ino);
    REQUIRE(dh.ok());
    std::vector<std::string> names;
    auto entries = ReadDir(ino, *dh, 0, 1'000'000, false);
    REQUIRE(entries.ok());
    for (auto& e : *entries) {
      if (e.name != "." && e.name != "..") names.push_back(e.name);
    }
    fs->ReleaseDir(*dh);
    return names;
  }
  uint64_t Calls(Operation op) const { return fake->CallCount(op); }

  testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<s3::ObjectStore> store;
  std::unique_ptr<FileSystem> fs;
};

// A Fixture whose file system reads through a MisbehavingStore over its fake store.
struct MisbehavingFixture {
  MisbehavingFixture()
      : fake(std::make_shared<FakeObjectStore>()),
        bad(std::make_shared<MisbehavingStore>(fake)),
        f("", bad) {
    f.fake = fake;
    fake->CreateBucketForTest(kBucket);
  }
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<MisbehavingStore> bad;
  Fixture f;
};

TEST_CASE("implicit directories, marker objects and files resolve by lookup and listing") {
  Fixture f;
  f.Put("implicit/file.txt", "hello");
  f.Put("marked/");  // marker only: an empty directory
  f.Put("top.bin", std::string(1000, 'z'));

  auto implicit = f.Lookup(kRootInode, "implicit");
  REQUIRE(implicit.ok());
  CHECK(implicit->attr.is_dir);
  CHECK(implicit->attr.mode == (S_IFDIR | 0555));
  CHECK(implicit->attr.nlink == 2);
  CHECK(implicit->attr.uid == 1234);
  CHECK(implicit->attr.ino >= 2);
  CHECK(implicit->generation == 1);
  CHECK(implicit->entry_timeout == std::chrono::seconds(100));

  auto marked = f.Lookup(kRootInode, "marked");
  REQUIRE(marked.ok());
  CHECK(marked->attr.is_dir);
  CHECK(f.Names(marked->attr.ino).empty());  // the marker is not a file named ""

  auto file = f.Lookup(kRootInode, "top.bin");
  REQUIRE(file.ok());
  CHECK_FALSE(file->attr.is_dir);
  CHECK(file->attr.mode == (S_IFREG | 0444));
  CHECK(file->attr.size == 1000);
  CHECK(file->attr.blocks == 2);
  CHECK(file->attr.nlink == 1);
  CHECK(file->attr.gid == 5678);

  auto nested = f.Lookup(implicit->attr.ino, "file.txt");
  REQUIRE(nested.ok());
  CHECK(nested->attr.size == 5);

  CHECK(f.Names(kRootInode) == std::vector<std::string>{"implicit", "marked", "top.bin"});
  CHECK(f.Lookup(kRootInode, "nope").status().code() == StatusCode::kNotFound);
}

TEST_CASE("a file and a prefix with the same name: the directory wins") {
  Fixture f;
  f.Put("a", "file");
  f.Put("a/child", "c");
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"a"});
  auto dh = f.OpenDir(kRootInode);
  REQUIRE(dh.ok());
  auto entries = f.ReadDir(kRootInode, *dh, 2, 10, true);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].entry.attr.is_dir);
  f.fs->ReleaseDir(*dh);

  Fixture g;  // the same through HEAD + LIST (no cached listing)
  g.Put("a", "file");
  g.Put("a/child", "c");
  auto a = g.Lookup(kRootInode, "a");
  REQUIRE(a.ok());
  CHECK(a->attr.is_dir);
  CHECK(g.Lookup(a->attr.ino, "child").ok());
}

TEST_CASE("keys that cannot be names are skipped, never a crash") {
  Fixture f;
  f.Put("ok");
  f.Put("dir//empty-component");
  f.Put("./dot");
  f.Put("../dotdot");
  f.Put(std::string(256, 'L'));
  f.Put(std::string(255, 'M'));
  f.Put(std::string("nul\0byte", 8));
  f.Put("d/.");
  f.Put("d/..");
  f.Put("d/fine");
  auto names = f.Names(kRootInode);
  CHECK(names == std::vector<std::string>{std::string(255, 'M'), "d", "dir", "ok"});
  auto dir = f.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  CHECK(f.Names(dir->attr.ino).empty());  // "dir//" has an empty component
  auto d = f.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(f.Names(d->attr.ino) == std::vector<std::string>{"fine"});

  CHECK(Errno(f.Lookup(kRootInode, std::string(256, 'L')).status()) == ENAMETOOLONG);
  CHECK(f.Lookup(kRootInode, "..").status().code() == StatusCode::kNotFound);
  CHECK(f.Lookup(kRootInode, "").status().code() == StatusCode::kNotFound);
}

TEST_CASE("name rules and warn-once") {
  CHECK(CheckName("ok") == NameProblem::kNone);
  CHECK(CheckName("") == NameProblem::kEmpty);
  CHECK(CheckName(".") == NameProblem::kDotOrDotDot);
  CHECK(CheckName("..") == NameProblem::kDotOrDotDot);
  CHECK(CheckName("...") == NameProblem::kNone);
  CHECK(CheckName(std::string(255, 'x')) == NameProblem::kNone);
  CHECK(CheckName(std::string(256, 'x')) == NameProblem::kTooLong);
  CHECK(CheckName(std::string("a\0b", 3)) == NameProblem::kHasNul);
  CHECK(CheckName("a/b") == NameProblem::kHasSlash);

  // A hostile key is reported once however often its directory is listed.
  WarnOnce warn(2);
  s3::ListObjectsPage page;
  page.common_prefixes = {"p//", "p/ok/"};
  page.objects.resize(2);
  page.objects[0].key = "p/..";
  page.objects[1].key = "p/";
  DirListing listing = BuildDirListing("p/", {page}, warn);
  REQUIRE(listing.entries.size() == 1);
  CHECK(listing.entries[0].name == "ok");
  CHECK(listing.has_marker);
  CHECK_FALSE(warn.First("p//"));
  CHECK_FALSE(warn.First("p/.."));
  CHECK_FALSE(warn.First("another"));  // bounded: full, stops remembering and warning
}

TEST_CASE("10 000 entries: ~10 LIST calls, no HEAD, full attributes with READDIRPLUS") {
  Fixture f;
  for (int i = 0; i < 10'000; ++i) f.Put(fmt::format("big/f{:05}", i), std::to_string(i));
  auto big = f.Lookup(kRootInode, "big");
  REQUIRE(big.ok());
  f.fake->ResetCallCounts();
  auto dh = f.OpenDir(big->attr.ino);
  REQUIRE(dh.ok());
  std::vector<DirEntry> all;
  uint64_t offset = 0;
  while (true) {
    auto chunk = f.ReadDir(big->attr.ino, *dh, offset, 333, true);
    REQUIRE(chunk.ok());
    if (chunk->empty()) break;
    f.fs->AcceptDirEntries(*chunk);
    offset = chunk->back().offset;
    for (auto& e : *chunk) all.push_back(std::move(e));
  }
  f.fs->ReleaseDir(*dh);
  CHECK(all.size() == 10'002);
  CHECK(f.Calls(Operation::kListObjects) == 10);
  CHECK(f.Calls(Operation::kHeadObject) == 0);
  CHECK(all[2].name == "f00000");
  CHECK(all[2].entry.attr.size == 1);
  CHECK(all[10'001].entry.attr.size == 4);
  CHECK(all[10'001].entry.attr.mode == (S_IFREG | 0444));

  // Lookups and GetAttr after the listing are answered from caches.
  auto e = f.Lookup(big->attr.ino, "f01234");
  REQUIRE(e.ok());
  CHECK(e->attr.ino == all[1236].entry.attr.ino);
  CHECK(f.GetAttr(e->attr.ino).ok());
  CHECK(f.Lookup(big->attr.ino, "missing").status().code() == StatusCode::kNotFound);
  CHECK(f.Calls(Operation::kListObjects) == 10);
  CHECK(f.Calls(Operation::kHeadObject) == 0);
  CHECK(f.fs->counters().list_requests >= 10);
}

TEST_CASE("readdir offsets resume and the snapshot is stable") {
  Fixture f;
  for (int i = 0; i < 7; ++i) f.Put(fmt::format("d/{}", i));
  auto d = f.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto dh = f.OpenDir(d->attr.ino);
  REQUIRE(dh.ok());
  auto first = f.ReadDir(d->attr.ino, *dh, 0, 4, false);
  REQUIRE(first.ok());
  REQUIRE(first->size() == 4);
  CHECK((*first)[0].name == ".");
  CHECK((*first)[0].entry.attr.ino == d->attr.ino);
  CHECK((*first)[1].name == "..");
  CHECK((*first)[1].entry.attr.ino == kRootInode);
  f.Put("d/00");  // appears only in a later OpenDir
  auto rest = f.ReadDir(d->attr.ino, *dh, (*first)[3].offset, 100, false);
  REQUIRE(rest.ok());
  std::vector<std::string> names;
  for (auto& e : *rest) names.push_back(e.name);
  CHECK(names == std::vector<std::string>{"2", "3", "4", "5", "6"});
  auto again = f.ReadDir(d->attr.ino, *dh, (*first)[1].offset, 1, false);  // seek back
  REQUIRE(again.ok());
  CHECK((*again)[0].name == "0");
  auto past = f.ReadDir(d->attr.ino, *dh, 1000, 10, false);
  REQUIRE(past.ok());
  CHECK(past->empty());
  f.fs->ReleaseDir(*dh);
  CHECK(f.ReadDir(d->attr.ino, *dh, 0, 10, false).status().code() != StatusCode::kOk);
}

TEST_CASE("lookup counts are exact; forgotten inodes are ESTALE and numbers are never reused") {
  Fixture f;
  f.Put("file");
  auto a = f.Lookup(kRootInode, "file");
  auto b = f.Lookup(kRootInode, "file");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->attr.ino == b->attr.ino);
  InodeId ino = a->attr.ino;
  f.fs->Forget(ino, 1);
  CHECK(f.GetAttr(ino).ok());  // one reference left
  f.fs->Forget(ino, 1);
  auto stale = f.GetAttr(ino);
  CHECK(stale.status().code() != StatusCode::kOk);
  CHECK(Errno(stale.status()) == ESTALE);
  CHECK(Errno(f.Open(ino).status()) == ESTALE);
  CHECK(Errno(f.Lookup(ino, "x").status()) == ESTALE);
  CHECK(Errno(f.GetAttr(999'999).status()) == ESTALE);
  auto again = f.Lookup(kRootInode, "file");
  REQUIRE(again.ok());
  CHECK(again->attr.ino > ino);

  // An open handle keeps a forgotten inode alive until Release.
  auto h = f.Open(again->attr.ino);
  REQUIRE(h.ok());
  f.fs->Forget(again->attr.ino, 1);
  CHECK(f.GetAttr(again->attr.ino).ok());
  f.fs->Release(h->fh);
  CHECK(Errno(f.GetAttr(again->attr.ino).status()) == ESTALE);
  CHECK(f.fs->counters().inodes == 1);  // only the root
}

TEST_CASE("READDIRPLUS counts only accepted entries") {
  Fixture f;
  f.Put("d/a");
  f.Put("d/b");
  auto d = f.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto dh = f.OpenDir(d->attr.ino);
  REQUIRE(dh.ok());
  auto entries = f.ReadDir(d->attr.ino, *dh, 0, 10, true);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 4);
  InodeId a = (*entries)[2].entry.attr.ino;
  InodeId b = (*entries)[3].entry.attr.ino;
  f.fs->AcceptDirEntries({(*entries)[0], (*entries)[1], (*entries)[2]});  // b did not fit
  f.fs->ReleaseDir(*dh);
  CHECK(f.GetAttr(a).ok());
  CHECK(Errno(f.GetAttr(b).status()) == ESTALE);  // never counted: dropped with the handle
  f.fs->Forget(a, 1);
  CHECK(Errno(f.GetAttr(a).status()) == ESTALE);
}

TEST_CASE("negative cache: a repeated miss costs nothing until negative_ttl passes") {
  Fixture f("", {}, /*lookup_listing_pages=*/0);  // a listing would answer the miss itself
  f.Put("later-dir/x");
  auto miss = f.Lookup(kRootInode, "ghost");
  CHECK(miss.status().code() == StatusCode::kNotFound);
  uint64_t heads = f.Calls(Operation::kHeadObject);
  uint64_t lists = f.Calls(Operation::kListObjects);
  CHECK(heads == 1);
  CHECK(lists == 1);
  CHECK(f.Lookup(kRootInode, "ghost").status().code() == StatusCode::kNotFound);
  CHECK(f.Calls(Operation::kHeadObject) == heads);
  CHECK(f.Calls(Operation::kListObjects) == lists);
  f.Put("ghost", "now here");
  f.clock.Advance(std::chrono::seconds(9));
  CHECK_FALSE(f.Lookup(kRootInode, "ghost").ok());
  f.clock.Advance(std::chrono::seconds(2));
  auto found = f.Lookup(kRootInode, "ghost");
  REQUIRE(found.ok());
  CHECK(found->attr.size == 8);
  CHECK(f.Calls(Operation::kHeadObject) == heads + 1);
}

TEST_CASE("metadata TTL: attributes and listings are revalidated after metadata_ttl") {
  Fixture f;
  f.Put("file", "1234");
  auto e = f.Lookup(kRootInode, "file");
  REQUIRE(e.ok());
  f.fake->ResetCallCounts();
  f.Put("file", "123456789");
  CHECK(f.GetAttr(e->attr.ino)->size == 4);  // cached
  CHECK(f.Calls(Operation::kHeadObject) == 0);
  f.clock.Advance(std::chrono::seconds(101));
  CHECK(f.GetAttr(e->attr.ino)->size == 9);
  CHECK(f.Calls(Operation::kHeadObject) == 1);

  CHECK(f.Names(kRootInode).size() == 1);
  f.Put("second");
  CHECK(f.Names(kRootInode).size() == 1);  // listing cached
  f.clock.Advance(std::chrono::seconds(101));
  CHECK(f.Names(kRootInode).size() == 2);
}

TEST_CASE("a file that vanished is NotFound on GetAttr after the TTL") {
  Fixture f;
  f.Put("gone");
  auto e = f.Lookup(kRootInode, "gone");
  REQUIRE(e.ok());
  s3::DeleteObjectRequest del{kBucket, "gone"};
  REQUIRE(s3::AwaitStatus([&](auto cb) { f.fake->DeleteObject(del, cb); }).ok());
  f.clock.Advance(std::chrono::seconds(101));
  CHECK(f.GetAttr(e->attr.ino).status().code() == StatusCode::kNotFound);
}

TEST_CASE("existing objects are never opened for writing; directories are EISDIR; keep_cache") {
  Fixture f;
  f.Put("file", "v1");
  f.Put("dir/x");
  auto e = f.Lookup(kRootInode, "file");
  REQUIRE(e.ok());
  for (int flags :
       {O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_RDONLY | O_APPEND, O_WRONLY | O_CREAT}) {
    // Objects are not changed in place (docs/semantics.md "Writes"): EPERM, not a rewrite.
    CHECK(Errno(f.Open(e->attr.ino, flags).status()) == EPERM);
  }
  auto dir = f.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  CHECK(Errno(f.Open(dir->attr.ino).status()) == EISDIR);
  CHECK(Errno(f.OpenDir(e->attr.ino).status()) == ENOTDIR);

  auto first = f.Open(e->attr.ino);
  REQUIRE(first.ok());
  CHECK_FALSE(first->keep_cache);
  CHECK(first->noflush);
  CHECK(f.fs->counters().open_handles == 1);
  f.fs->Release(first->fh);
  auto second = f.Open(e->attr.ino);
  REQUIRE(second.ok());
  CHECK(second->keep_cache);
  f.fs->Release(second->fh);

  f.Put("file", "v2-changed");
  f.clock.Advance(std::chrono::seconds(101));
  auto third = f.Open(e->attr.ino);
  REQUIRE(third.ok());
  CHECK_FALSE(third->keep_cache);
  f.fs->Release(third->fh);
  CHECK(f.fs->counters().open_handles == 0);
}

TEST_CASE("errors from the store surface with their Status codes") {
  auto fake = std::make_shared<FakeObjectStore>();
  auto faults = std::make_shared<s3::FaultInjectingStore>(fake);
  // The per-name path: a failing lookup listing falls back to it (lookup_listing_test.cc).
  Fixture f("", faults, /*lookup_listing_pages=*/0);
  f.fake = fake;  // the Fixture's own fake is unused; test helpers act on the wrapped one
  fake->CreateBucketForTest(kBucket);
  fake->PutObjectForTest(kBucket, "file", "data");
  fake->PutObjectForTest(kBucket, "dir/x", "x");

  faults->FailNext(Operation::kListObjects, 1, Status::Unavailable("injected 503"));
  CHECK(f.Lookup(kRootInode, "file").status().code() == StatusCode::kUnavailable);
  faults->FailNext(Operation::kHeadObject, 1, Status::PermissionDenied("injected 403"));
  CHECK(f.Lookup(kRootInode, "file").status().code() == StatusCode::kPermissionDenied);
  // The directory wins even when HEAD fails.
  faults->FailNext(Operation::kHeadObject, 1, Status::PermissionDenied("injected 403"));
  CHECK(f.Lookup(kRootInode, "dir").ok());
  faults->FailNext(Operation::kListObjects, 1, Status::Unavailable("injected 503"));
  CHECK(f.OpenDir(kRootInode).status().code() == StatusCode::kUnavailable);
  // A failure on the second page fails the whole listing, not a partial one.
  for (int i = 0; i < 1500; ++i) fake->PutObjectForTest(kBucket, fmt::format("many/{}", i), "");
  auto many = f.Lookup(kRootInode, "many");
  REQUIRE(many.ok());
  int calls = 0;
  faults->SetFault(Operation::kListObjects, [&](const s3::RequestInfo&) -> std::optional<Status> {
    if (++calls == 2) return Status::Unavailable("page 2");
    return std::nullopt;
  });
  CHECK(f.OpenDir(many->attr.ino).status().code() == StatusCode::kUnavailable);
  faults->ClearFaults();
  auto file = f.Lookup(kRootInode, "file");
  REQUIRE(file.ok());
  f.clock.Advance(std::chrono::seconds(101));
  faults->FailNext(Operation::kHeadObject, 1, Status::Unavailable("injected"));
  CHECK(f.GetAttr(file->attr.ino).status().code() == StatusCode::kUnavailable);
  faults->FailNext(Operation::kHeadObject, 1, Status::Unavailable("injected"));
  CHECK(f.Open(file->attr.ino).status().code() == StatusCode::kUnavailable);
}

std::string Bytes(const ReadData& data) {
  std::string got;
  for (auto piece : data.pieces) {
    got.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  }
  return got;
}

TEST_CASE("a listing whose continuation token repeats, cycles or is missing fails (EIO), bounded") {
  using Fault = MisbehavingStore::Fault;
  auto fake = std::make_shared<FakeObjectStore>();
  auto bad = std::make_shared<MisbehavingStore>(fake);
  Fixture f("", bad, /*lookup_listing_pages=*/0);
  f.fake = fake;
  fake->CreateBucketForTest(kBucket);
  fake->PutObjectForTest(kBucket, "dir/a", "a");
  auto dir = f.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  // Each case: the listing stops at the first page that cannot be followed (a server paging for
  // ever would otherwise be listed for ever), with a protocol-violation status the errno table
  // maps to EIO, never a partial listing.
  struct Case {
    Fault fault;
    int max_calls;
  };
  for (const Case c : {Case{Fault::kRepeatToken, 2}, Case{Fault::kTokenCycle, 3},
                       Case{Fault::kTruncatedNoToken, 1}}) {
    CAPTURE(static_cast<int>(c.fault));
    bad->fault = c.fault;
    bad->list_calls = 0;
    auto dh = f.OpenDir(dir->attr.ino);
    REQUIRE_FALSE(dh.ok());
    CHECK(dh.status().code() == StatusCode::kDataLoss);
    CHECK(bad->list_calls.load() == c.max_calls);
  }
  // The same server fixed: the listing works again.
  bad->fault = Fault::kNone;
  CHECK(f.Names(dir->attr.ino) == std::vector<std::string>{"a"});
}

TEST_CASE("a server that ignores If-Match: another version's bytes never reach read()") {
  using Fault = MisbehavingStore::Fault;
  MisbehavingFixture mf;
  Fixture& f = mf.f;
  auto& fake = mf.fake;
  auto& bad = mf.bad;
  const std::string v1(20 << 20, 'a');  // larger than a part: read by ranged GETs
  fake->PutObjectForTest(kBucket, "big", v1);
  fake->PutObjectForTest(kBucket, "small", "version one");  // fetched whole at open
  auto e = f.Lookup(kRootInode, "big");
  REQUIRE(e.ok());
  auto small = f.Lookup(kRootInode, "small");
  REQUIRE(small.ok());
  auto h = f.Open(e->attr.ino);
  REQUIRE(h.ok());
  auto read = [&](InodeId ino, uint64_t fh, uint64_t off, size_t size) {
    return Await<ReadData>([&](auto cb) { f.fs->Read(ino, fh, off, size, nullptr, cb); });
  };
  auto first = read(e->attr.ino, h->fh, 0, 4096);
  REQUIRE(first.ok());
  CHECK(Bytes(*first) == v1.substr(0, 4096));
  // Both objects are replaced by ones of the same size; the server ignores If-Match.
  bad->fault = Fault::kIgnoreIfMatch;
  fake->PutObjectForTest(kBucket, "big", std::string(20 << 20, 'b'));
  fake->PutObjectForTest(kBucket, "small", "version two");
  // A far jump: a new ranged GET, answered with the new version's bytes and ETag.
  auto late = read(e->attr.ino, h->fh, 16 << 20, 65536);
  REQUIRE_FALSE(late.ok());
  CHECK(late.status().code() == StatusCode::kFailedPrecondition);
  CHECK(late.status().detail().s3_code == "PreconditionFailed");
  CHECK(Errno(late.status()) == ESTALE);
  // The small file's GET at open (pinned to the listed ETag) gets the new version too.
  auto hs = f.Open(small->attr.ino);
  REQUIRE(hs.ok());
  auto small_read = read(small->attr.ino, hs->fh, 0, 4096);
  REQUIRE_FALSE(small_read.ok());
  CHECK(small_read.status().detail().s3_code == "PreconditionFailed");
  CHECK(Errno(small_read.status()) == ESTALE);
  f.fs->Release(hs->fh);
  // A server that honours If-Match says the same with a 412.
  bad->fault = Fault::kNone;
  auto honest = read(e->attr.ino, h->fh, 8 << 20, 65536);
  REQUIRE_FALSE(honest.ok());
  CHECK(honest.status().code() == StatusCode::kFailedPrecondition);
  CHECK(Errno(honest.status()) == ESTALE);
  f.fs->Release(h->fh);
}

TEST_CASE("a mount prefix is the root") {
  Fixture f("data/");
  f.Put("data/a");
  f.Put("other/b");
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"a"});
  CHECK(f.Lookup(kRootInode, "a").ok());
  CHECK_FALSE(f.Lookup(kRootInode, "other").ok());
  auto s = f.fs->StatFs();
  CHECK(s.blocks > 0);
  CHECK(s.max_name == 255);
  // Inodes: the known ones (the root and "a") used of a large total, so df -i is not negative.
  CHECK(s.files_used == 2);
  CHECK(s.files > s.files_used);
}

TEST_CASE("Read goes through the prefetcher and returns the object's bytes") {
  Fixture f;
  std::string data(100'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  f.Put("blob", data);
  auto e = f.Lookup(kRootInode, "blob");
  REQUIRE(e.ok());
  auto h = f.Open(e->attr.ino);
  REQUIRE(h.ok());
  auto r =
      Await<ReadData>([&](auto cb) { f.fs->Read(e->attr.ino, h->fh, 1000, 5000, nullptr, cb); });
  REQUIRE(r.ok());
  std::string got;
  for (auto piece : r->pieces)
    got.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  CHECK(got == data.substr(1000, 5000));
  CHECK(f.fs->counters().bytes_read == 5000);
  f.fs->Release(h->fh);
  auto bad = Await<ReadData>([&](auto cb) { f.fs->Read(e->attr.ino, h->fh, 0, 10, nullptr, cb); });
  CHECK_FALSE(bad.ok());
}

TEST_CASE("ReadTo: one ranged GET straight into the sink, the same answers as Read") {
  using Fault = MisbehavingStore::Fault;
  MisbehavingFixture mf;
  Fixture& f = mf.f;
  auto& fake = mf.fake;
  auto& bad = mf.bad;
  std::string data(3'000'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 3);
  fake->PutObjectForTest(kBucket, "blob", data);
  auto e = f.Lookup(kRootInode, "blob");
  REQUIRE(e.ok());
  auto h = f.Open(e->attr.ino);
  REQUIRE(h.ok());
  std::string got;
  bool in_order = true;
  auto sink = [&](uint64_t at, std::span<const std::byte> bytes) -> Status {
    if (at != got.size()) in_order = false;
    got.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return Status::Ok();
  };
  auto read_to = [&](uint64_t off, size_t size, FileSystem::ReadSink s) -> Result<uint64_t> {
    auto r = Await<FileSystem::ReadToResult>([&](auto cb) {
      f.fs->ReadTo(e->attr.ino, h->fh, off, size, FileSystem::ReadTarget{.sink = s}, nullptr, cb);
    });
    if (!r.ok()) return r.status();
    CHECK(r->via == rdmaio::DataPath::kHttp);
    return r->bytes;
  };
  const uint64_t gets = f.Calls(Operation::kGetObject);
  auto n = read_to(12'345, 2'000'000, sink);
  REQUIRE(n.ok());
  CHECK(*n == 2'000'000);
  CHECK(in_order);
  CHECK(got == data.substr(12'345, 2'000'000));
  CHECK(f.Calls(Operation::kGetObject) == gets + 1);  // one GET, no prefetcher parts
  CHECK(f.fs->counters().direct_reads == 1);
  // Short at the end of the object, 0 past it.
  got.clear();
  auto tail = read_to(data.size() - 100, 4096, sink);
  REQUIRE(tail.ok());
  CHECK(*tail == 100);
  CHECK(got == data.substr(data.size() - 100));
  auto past = read_to(data.size() + 5, 4096, sink);
  REQUIRE(past.ok());
  CHECK(*past == 0);
  // A sink that refuses aborts the read with its Status.
  auto refused = read_to(0, 1 << 20, [](uint64_t, std::span<const std::byte>) {
    return Status::Cancelled("client gone");
  });
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kCancelled);
  // The object replaced under the handle by one of the same size, the server ignoring If-Match:
  // ESTALE, as through Read.
  bad->fault = Fault::kIgnoreIfMatch;
  fake->PutObjectForTest(kBucket, "blob", std::string(data.size(), 'z'));
  got.clear();
  auto stale = read_to(0, 1 << 20, sink);
  REQUIRE_FALSE(stale.ok());
  CHECK(Errno(stale.status()) == ESTALE);
  bad->fault = Fault::kNone;
  auto honest = read_to(0, 1 << 20, sink);
  REQUIRE_FALSE(honest.ok());
  CHECK(Errno(honest.status()) == ESTALE);
  f.fs->Release(h->fh);
  auto closed = read_to(0, 10, sink);
  CHECK_FALSE(closed.ok());
  // A window without the mount's data channel, or no target at all: refused, not a crash.
  auto h2 = f.Open(e->attr.ino);
  REQUIRE(h2.ok());
  auto none = Await<FileSystem::ReadToResult>([&](auto cb) {
    f.fs->ReadTo(e->attr.ino, h2->fh, 0, 10, FileSystem::ReadTarget{}, nullptr, cb);
  });
  CHECK(none.status().code() == StatusCode::kInvalidArgument);
  f.fs->Release(h2->fh);
}

TEST_CASE("open starts a small file's GET; the read joins it; a keep_cache re-open does not") {
  Fixture f;
  std::string data(64 * 1024, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13 + 1);
  f.Put("small", data);
  auto e = f.Lookup(kRootInode, "small");
  REQUIRE(e.ok());
  const uint64_t gets_before = f.Calls(Operation::kGetObject);
  auto h = f.Open(e->attr.ino);
  REQUIRE(h.ok());
  f.fake->WaitIdle();
  CHECK(f.Calls(Operation::kGetObject) == gets_before + 1);  // before any READ
  auto r =
      Await<ReadData>([&](auto cb) { f.fs->Read(e->attr.ino, h->fh, 0, 128 * 1024, nullptr, cb); });
  REQUIRE(r.ok());
  std::string got;
  for (auto piece : r->pieces)
    got.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  CHECK(got == data);
  CHECK(f.Calls(Operation::kGetObject) == gets_before + 1);  // the read found it, no second GET
  f.fs->Release(h->fh);
  // Unchanged ETag: the kernel keeps its page cache, no READ will come, so no GET either.
  auto again = f.Open(e->attr.ino);
  REQUIRE(again.ok());
  CHECK(again->keep_cache);
  f.fake->WaitIdle();
  CHECK(f.Calls(Operation::kGetObject) == gets_before + 1);
  f.fs->Release(again->fh);
}

TEST_CASE("--direct-io: read opens are FOPEN_DIRECT_IO, never keep_cache, and start the GET") {
  auto fake = std::make_shared<FakeObjectStore>();
  fake->CreateBucketForTest(kBucket);
  fake->PutObjectForTest(kBucket, "small", std::string(64 * 1024, 'd'));
  MountOptions options;
  options.bucket = kBucket;
  options.direct_io_reads = true;
  testing::FakeClock clock;
  auto fs = CreateFileSystem(fake, options, CreateHeapBufferPool(),
                             std::make_shared<MemoryBudget>(64ull << 20), clock);
  auto e = Await<Entry>([&](auto cb) { fs->Lookup(kRootInode, "small", cb); });
  REQUIRE(e.ok());
  const auto gets = [&] { return fake->CallCount(Operation::kGetObject); };
  const uint64_t gets_before = gets();
  for (int i = 0; i < 2; ++i) {
    // The second open has the same ETag: without --direct-io it keeps the page cache and sends
    // no GET; here every read() will come, so the cache is not kept and the GET starts again.
    auto h = Await<OpenedFile>([&](auto cb) { fs->Open(e->attr.ino, O_RDONLY, 0, cb); });
    REQUIRE(h.ok());
    CHECK(h->direct_io);
    CHECK_FALSE(h->keep_cache);
    fake->WaitIdle();
    CHECK(gets() == gets_before + 1 + static_cast<uint64_t>(i));
    fs->Release(h->fh);
  }
}

TEST_CASE("concurrent lookups, listings and forgets from many threads") {
  Fixture f;
  for (int i = 0; i < 50; ++i) f.Put(fmt::format("d{}/f{}", i % 5, i), "abc");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        auto d = f.Lookup(kRootInode, fmt::format("d{}", (t + i) % 5));
        if (!d.ok()) {
          ++failures;
          continue;
        }
        if (i % 3 == 0) f.Names(d->attr.ino);
        auto e = f.Lookup(d->attr.ino, fmt::format("f{}", (t + i) % 5 + 5 * ((t + i) % 10)));
        if (e.ok()) f.fs->Forget(e->attr.ino, 1);
        f.fs->Forget(d->attr.ino, 1);
        if (i % 10 == 0) f.clock.Advance(std::chrono::seconds(50));
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(f.fs->counters().inodes == 1);  // every lookup was forgotten
}

TEST_CASE("destroying the file system with requests in flight still calls back once") {
  auto fake = std::make_shared<FakeObjectStore>();
  fake->CreateBucketForTest(kBucket);
  fake->PutObjectForTest(kBucket, "slow", "x");
  auto faults = std::make_shared<s3::FaultInjectingStore>(fake);
  faults->SetLatency(Operation::kHeadObject, std::chrono::milliseconds(200));
  Fixture f("", faults);
  auto promise = std::make_shared<std::promise<Result<Entry>>>();
  auto future = promise->get_future();
  f.fs->Lookup(kRootInode, "slow",
               [promise](Result<Entry> r) { promise->set_value(std::move(r)); });
  f.fs.reset();
  auto r = future.get();  // set_value twice would throw: exactly once
  CHECK(r.ok());
}

// Random trees, random operations, compared with a trivial model of what the tree should show.
TEST_CASE("reference model: lookup/readdir/getattr over random trees") {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    Fixture f;
    std::map<std::string, uint64_t> files;  // model: key -> size
    const char* parts[] = {"a", "b", "c"};
    for (int i = 0; i < 40; ++i) {
      std::string key;
      int depth = 1 + static_cast<int>(rng() % 3);
      for (int d = 0; d < depth; ++d) key += std::string(d ? "/" : "") + parts[rng() % 3];
      uint64_t size = rng() % 50;
      files[key] = size;
      f.Put(key, std::string(size, 'q'));
    }
    // Model: children of a directory prefix. Directories win over files of the same name.
    auto children = [&](const std::string& prefix) {
      std::map<std::string, std::optional<uint64_t>> out;  // name -> size (nullopt: dir)
      for (auto& [k, size] : files) {
        if (k.compare(0, prefix.size(), prefix) != 0) continue;
        std::string rest = k.substr(prefix.size());
        auto slash = rest.find('/');
        if (slash != std::string::npos) {
          out[rest.substr(0, slash)] = std::nullopt;
        } else if (!out.contains(rest)) {
          out[rest] = size;
        }
      }
      return out;
    };
    std::map<std::string, InodeId> inos{{"", kRootInode}};  // dir prefix -> inode
    for (int step = 0; step < 60; ++step) {
      auto it = inos.begin();
      std::advance(it, rng() % inos.size());
      auto [prefix, ino] = *it;
      auto model = children(prefix);
      switch (rng() % 3) {
        case 0: {  // lookup of an existing or a random name
          std::string name = parts[rng() % 3];
          auto e = f.Lookup(ino, name);
          auto m = model.find(name);
          if (m == model.end()) {
            CHECK(e.status().code() == StatusCode::kNotFound);
          } else {
            REQUIRE(e.ok());
            CHECK(e->attr.is_dir == !m->second.has_value());
            if (m->second) CHECK(e->attr.size == *m->second);
            if (e->attr.is_dir) inos[prefix + name + "/"] = e->attr.ino;
          }
          break;
        }
        case 1: {  // readdir
          std::vector<std::string> want;
          for (auto& [n, s] : model) want.push_back(n);
          CHECK(f.Names(ino) == want);
          break;
        }
        default: {
          auto a = f.GetAttr(ino);
          REQUIRE(a.ok());
          CHECK(a->is_dir);
          if (rng() % 4 == 0) f.clock.Advance(std::chrono::seconds(60));
          break;
        }
      }
    }
  }
}

}  // namespace
}  // namespace reelfs::fuse

// FileSystem writes against the in-memory FakeObjectStore: new files (visible in S3 only once
// flushed, in this mount at once), the writer-process rule for FLUSH, sequential-only writes,
// EBUSY for a second open, local directories, unlink and rmdir with and without allow_delete,
// truncate, overwrite with and without allow_overwrite, and --read-only. The Upload's part schedule
// is upload_test.cc's.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "fuse/core/filesystem.h"
#include "fuse/core/process_identity.h"
#include "fuse/lowlevel/errno_map.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "s3/fake/fault_injecting_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/store_calls.h"

namespace reelfs::fuse {
namespace {

using s3::Await;
using s3::AwaitStatus;
using s3::FakeObjectStore;

constexpr char kBucket[] = "bkt";

int Errno(const Status& s) { return StatusToErrno(s); }

uint32_t Me() { return static_cast<uint32_t>(::getpid()); }

struct Fixture {
  explicit Fixture(WriteOptions write = {})
      : fake(std::make_shared<FakeObjectStore>()),
        faults(std::make_shared<s3::FaultInjectingStore>(fake)) {
    fake->CreateBucketForTest(kBucket);
    MountOptions options;
    options.bucket = kBucket;
    options.metadata_ttl = std::chrono::seconds(100);
    options.negative_ttl = std::chrono::seconds(10);
    options.write = write;
    options.file_mode = write.read_only ? 0444 : 0644;
    options.dir_mode = write.read_only ? 0555 : 0755;
    fs = CreateFileSystem(faults, options, CreateHeapBufferPool(),
                          std::make_shared<MemoryBudget>(256ull << 20), clock);
  }
  void Put(const std::string& key, std::string data = "x") {
    fake->PutObjectForTest(kBucket, key, std::move(data));
  }
  Result<Entry> Lookup(InodeId parent, std::string_view name) {
    return Await<Entry>([&](auto cb) { fs->Lookup(parent, name, cb); });
  }
  Result<Attributes> GetAttr(InodeId ino) {
    return Await<Attributes>([&](auto cb) { fs->GetAttr(ino, cb); });
  }
  Result<FileSystem::CreatedFile> Create(InodeId parent, std::string_view name, uint32_t pid = Me(),
                                         int flags = O_WRONLY | O_CREAT) {
    return Await<FileSystem::CreatedFile>(
        [&](auto cb) { fs->Create(parent, name, flags, pid, cb); });
  }
  // An OPEN for writing (an overwrite) as the CreatedFile the write helpers take.
  Result<FileSystem::CreatedFile> OpenToWrite(InodeId ino, int flags) {
    auto opened = Open(ino, flags);
    if (!opened.ok()) return opened.status();
    FileSystem::CreatedFile f;
    f.entry.attr.ino = ino;
    f.file = *opened;
    return f;
  }
  Result<size_t> Write(const FileSystem::CreatedFile& f, uint64_t offset, const std::string& s) {
    return Await<size_t>([&](auto cb) {
      fs->Write(f.entry.attr.ino, f.file.fh, offset,
                std::span(reinterpret_cast<const std::byte*>(s.data()), s.size()), cb);
    });
  }
  Status Flush(const FileSystem::CreatedFile& f, bool fsync = false, uint32_t pid = Me()) {
    return AwaitStatus([&](auto cb) { fs->Flush(f.entry.attr.ino, f.file.fh, fsync, pid, cb); });
  }
  Result<OpenedFile> Open(InodeId ino, int flags) {
    return Await<OpenedFile>([&](auto cb) { fs->Open(ino, flags, Me(), cb); });
  }
  Result<Entry> MkDir(InodeId parent, std::string_view name) {
    return Await<Entry>([&](auto cb) { fs->MkDir(parent, name, cb); });
  }
  Status Unlink(InodeId parent, std::string_view name) {
    return AwaitStatus([&](auto cb) { fs->Unlink(parent, name, cb); });
  }
  Status RmDir(InodeId parent, std::string_view name) {
    return AwaitStatus([&](auto cb) { fs->RmDir(parent, name, cb); });
  }
  Result<Attributes> Truncate(InodeId ino, uint64_t size) {
    FileSystem::SetAttrRequest r;
    r.size = size;
    return Await<Attributes>([&](auto cb) { fs->SetAttr(ino, r, cb); });
  }
  // The object's bytes in the fake store, or its error (NotFound when absent).
  Result<std::string> Stored(const std::string& key) {
    auto bytes = reelfs::testing::GetBytes(*fake, kBucket, key, std::nullopt, 64ull << 20);
    if (!bytes.ok()) return bytes.status();
    return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  }
  std::vector<std::string> Names(InodeId ino) {
    auto dh = Await<uint64_t>([&](auto cb) { fs->OpenDir(ino, cb); });
    REQUIRE(dh.ok());
    auto entries = Await<std::vector<DirEntry>>(
        [&](auto cb) { fs->ReadDir(ino, *dh, 0, 1'000'000, false, cb); });
    REQUIRE(entries.ok());
    std::vector<std::string> names;
    for (auto& e : *entries) {
      if (e.name != "." && e.name != "..") names.push_back(e.name);
    }
    fs->ReleaseDir(*dh);
    return names;
  }

  testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<s3::FaultInjectingStore> faults;  // passes everything on unless told
  std::unique_ptr<FileSystem> fs;
};

TEST_CASE("ProcessOf: this thread's process, another thread's too, unknown stays unknown") {
  CHECK(detail::ProcessOf(Me()) == Me());
  uint32_t from_thread = 0;
  std::thread([&] { from_thread = detail::ProcessOf(static_cast<uint32_t>(::gettid())); }).join();
  CHECK(from_thread == Me());
  CHECK(detail::ProcessOf(0) == 0);
  CHECK(detail::ProcessOf(1) != Me());  // init is another process
}

TEST_CASE("a new file: listed and sized here at once, in S3 only after the writer's flush") {
  Fixture f;
  auto c = f.Create(kRootInode, "new.bin");
  REQUIRE(c.ok());
  CHECK(c->entry.attr.mode == (S_IFREG | 0644));
  CHECK(c->file.noflush == false);
  CHECK(c->file.direct_io);  // writes skip the page cache: the upload never reads it
  REQUIRE(f.Write(*c, 0, "hello ").ok());
  REQUIRE(f.Write(*c, 6, "world").ok());
  // Reading back through the writing handle: EBADF, saying why; the upload goes on.
  auto back = Await<ReadData>(
      [&](auto cb) { f.fs->Read(c->entry.attr.ino, c->file.fh, 0, 6, nullptr, cb); });
  CHECK(Errno(back.status()) == EBADF);
  CHECK(back.status().message().find("being written") != std::string::npos);
  CHECK(f.Stored("new.bin").status().code() == StatusCode::kNotFound);
  auto attr = f.GetAttr(c->entry.attr.ino);
  REQUIRE(attr.ok());
  CHECK(attr->size == 11);
  auto looked = f.Lookup(kRootInode, "new.bin");
  REQUIRE(looked.ok());
  CHECK(looked->attr.ino == c->entry.attr.ino);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"new.bin"});
  // A second open while it is written: EBUSY; a second create of the name: not a new file.
  CHECK(Errno(f.Open(c->entry.attr.ino, O_RDONLY).status()) == EBUSY);
  CHECK_FALSE(f.Create(kRootInode, "new.bin").ok());
  // Another process's FLUSH (a child closing its inherited copy at exec) completes nothing.
  CHECK(f.Flush(*c, false, 1).ok());
  CHECK(f.Stored("new.bin").status().code() == StatusCode::kNotFound);
  REQUIRE(f.Write(*c, 11, "!").ok());
  // The writer's own FLUSH, from any of its threads, does.
  Status s;
  std::thread([&] { s = f.Flush(*c, false, static_cast<uint32_t>(::gettid())); }).join();
  CHECK(s.ok());
  CHECK(f.Stored("new.bin").value() == "hello world!");
  CHECK(Errno(f.Write(*c, 12, "late").status()) == EBADF);
  CHECK(f.Flush(*c).ok());  // a later close answers the same outcome
  f.fs->Release(c->file.fh);
  auto after = f.Lookup(kRootInode, "new.bin");
  REQUIRE(after.ok());
  CHECK(after->attr.size == 12);
  auto reopened = f.Open(after->attr.ino, O_RDONLY);
  CHECK(reopened.ok());
  if (reopened.ok()) f.fs->Release(reopened->fh);
}

TEST_CASE("an empty flush defers; fsync and release complete, even an empty file") {
  Fixture f;
  auto a = f.Create(kRootInode, "a");
  REQUIRE(a.ok());
  CHECK(f.Flush(*a).ok());  // dd's dup-and-close before any write
  CHECK(f.Stored("a").status().code() == StatusCode::kNotFound);
  REQUIRE(f.Write(*a, 0, "data").ok());
  CHECK(f.Flush(*a).ok());
  CHECK(f.Stored("a").value() == "data");
  f.fs->Release(a->file.fh);

  auto e = f.Create(kRootInode, "empty");
  REQUIRE(e.ok());
  CHECK(f.Flush(*e, /*fsync=*/true).ok());
  CHECK(f.Stored("empty").value().empty());
  f.fs->Release(e->file.fh);

  auto r = f.Create(kRootInode, "released");
  REQUIRE(r.ok());
  REQUIRE(f.Write(*r, 0, "xyz").ok());
  CHECK(f.Flush(*r, false, 1).ok());  // not the writer: nothing completes
  f.fs->Release(r->file.fh);          // the last close completes
  for (int i = 0; i < 200 && !f.Stored("released").ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(f.Stored("released").value() == "xyz");
}

TEST_CASE("a write that is not sequential: EINVAL, the file is dropped, nothing stored") {
  Fixture f;
  auto c = f.Create(kRootInode, "hole.bin");
  REQUIRE(c.ok());
  REQUIRE(f.Write(*c, 0, "0123456789").ok());
  CHECK(Errno(f.Write(*c, 100, "x").status()) == EINVAL);
  CHECK(Errno(f.Write(*c, 10, "x").status()) == EINVAL);  // the handle stays failed
  CHECK(Errno(f.Flush(*c)) == EINVAL);
  f.fs->Release(c->file.fh);
  CHECK(f.Stored("hole.bin").status().code() == StatusCode::kNotFound);
  CHECK(Errno(f.Lookup(kRootInode, "hole.bin").status()) == ENOENT);
}

TEST_CASE(
    "truncate: 0 before a part is sent drops the bytes, the own size is a no-op, else EPERM") {
  Fixture f;
  auto c = f.Create(kRootInode, "t");
  REQUIRE(c.ok());
  REQUIRE(f.Write(*c, 0, "discarded").ok());
  REQUIRE(f.Truncate(c->entry.attr.ino, 0).ok());
  REQUIRE(f.Write(*c, 0, "kept").ok());
  CHECK(Errno(f.Truncate(c->entry.attr.ino, 100).status()) == EPERM);
  CHECK(f.Flush(*c).ok());
  f.fs->Release(c->file.fh);
  CHECK(f.Stored("t").value() == "kept");

  f.Put("old.txt", "old");
  auto old = f.Lookup(kRootInode, "old.txt");
  REQUIRE(old.ok());
  CHECK(f.Truncate(old->attr.ino, 3).ok());
  CHECK(Errno(f.Truncate(old->attr.ino, 0).status()) == EPERM);
  CHECK(Errno(f.Open(old->attr.ino, O_WRONLY).status()) == EPERM);
  CHECK(Errno(f.Open(old->attr.ino, O_RDWR | O_APPEND).status()) == EPERM);
  CHECK(Errno(f.Create(kRootInode, "old.txt").status()) == EPERM);  // no overwrite
  CHECK(f.Stored("old.txt").value() == "old");
}

TEST_CASE(
    "overwrite: EPERM without allow_overwrite; O_TRUNC with it replaces the object at close") {
  {
    Fixture f;
    f.Put("ckpt.pt", "old bytes");
    auto e = f.Lookup(kRootInode, "ckpt.pt");
    REQUIRE(e.ok());
    CHECK(Errno(f.Open(e->attr.ino, O_WRONLY | O_TRUNC).status()) == EPERM);
    CHECK(Errno(f.Create(kRootInode, "ckpt.pt", Me(), O_WRONLY | O_CREAT | O_TRUNC).status()) ==
          EPERM);
    CHECK(f.Stored("ckpt.pt").value() == "old bytes");
  }
  WriteOptions w;
  w.allow_overwrite = true;
  Fixture f(w);
  f.Put("ckpt.pt", "old bytes");
  f.Put("other", "1");
  auto e = f.Lookup(kRootInode, "ckpt.pt");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  // Without O_TRUNC it would be a change in place: still refused.
  CHECK(Errno(f.Open(ino, O_WRONLY).status()) == EPERM);
  CHECK(Errno(f.Open(ino, O_RDWR | O_APPEND).status()) == EPERM);

  auto h = f.OpenToWrite(ino, O_WRONLY | O_TRUNC);
  REQUIRE(h.ok());
  CHECK(h->file.direct_io);
  CHECK(f.GetAttr(ino).value().size == 0);                          // this mount: the new file
  CHECK(Errno(f.Open(ino, O_RDONLY).status()) == EBUSY);            // being written
  CHECK(Errno(f.Open(ino, O_WRONLY | O_TRUNC).status()) == EBUSY);  // one writer
  REQUIRE(f.Write(*h, 0, "new ").ok());
  REQUIRE(f.Write(*h, 4, "checkpoint").ok());
  CHECK(f.GetAttr(ino).value().size == 14);
  CHECK(f.Stored("ckpt.pt").value() == "old bytes");  // other clients: the old object until close
  CHECK(f.Flush(*h).ok());
  CHECK(f.Stored("ckpt.pt").value() == "new checkpoint");
  CHECK(Errno(f.Write(*h, 14, "more").status()) == EBADF);
  f.fs->Release(h->file.fh);
  CHECK(f.GetAttr(ino).value().size == 14);
  auto reader = f.Open(ino, O_RDONLY);
  REQUIRE(reader.ok());
  CHECK_FALSE(reader->keep_cache);  // another ETag: the old object's pages go
  f.fs->Release(reader->fh);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"ckpt.pt", "other"});

  // CREATE of a name the kernel thought absent but S3 has: O_TRUNC replaces, O_EXCL is EEXIST,
  // neither flag is a change in place.
  REQUIRE(f.Lookup(kRootInode, "other").ok());
  CHECK(Errno(f.Create(kRootInode, "other", Me(), O_WRONLY | O_CREAT | O_EXCL).status()) == EEXIST);
  CHECK(Errno(f.Create(kRootInode, "other").status()) == EPERM);
  auto c = f.Create(kRootInode, "other", Me(), O_WRONLY | O_CREAT | O_TRUNC);
  REQUIRE(c.ok());
  REQUIRE(f.Write(*c, 0, "22").ok());
  CHECK(f.Flush(*c).ok());
  f.fs->Release(c->file.fh);
  CHECK(f.Stored("other").value() == "22");
}

TEST_CASE("a failed overwrite loses nothing: S3 and the mount keep the old object") {
  WriteOptions w;
  w.allow_overwrite = true;
  Fixture f(w);
  f.Put("keep.bin", "precious");
  auto e = f.Lookup(kRootInode, "keep.bin");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  f.faults->FailNext(s3::Operation::kPutObject, 1, Status::PermissionDenied("injected 403"));
  auto h = f.OpenToWrite(ino, O_WRONLY | O_TRUNC);
  REQUIRE(h.ok());
  REQUIRE(f.Write(*h, 0, "garbage").ok());
  CHECK(Errno(f.Flush(*h)) == EACCES);
  f.fs->Release(h->file.fh);
  CHECK(f.Stored("keep.bin").value() == "precious");
  CHECK(f.GetAttr(ino).value().size == 8);  // the old object's size again
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"keep.bin"});
  auto reader = f.Open(ino, O_RDONLY);
  CHECK(reader.ok());
  if (reader.ok()) f.fs->Release(reader->fh);

  // A non-sequential write drops the replacement, not the object.
  auto again = f.OpenToWrite(ino, O_WRONLY | O_TRUNC);
  REQUIRE(again.ok());
  CHECK(Errno(f.Write(*again, 5, "x").status()) == EINVAL);
  CHECK(Errno(f.Flush(*again)) == EINVAL);
  f.fs->Release(again->file.fh);
  CHECK(f.Stored("keep.bin").value() == "precious");
  CHECK(f.Lookup(kRootInode, "keep.bin").value().attr.size == 8);
}

TEST_CASE("mkdir: local until a file is written below it; rmdir of a local empty one") {
  Fixture f;
  f.Put("remote/file", "r");
  auto d = f.MkDir(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(d->attr.is_dir);
  CHECK(d->attr.mode == (S_IFDIR | 0755));
  auto e = f.MkDir(d->attr.ino, "e");
  REQUIRE(e.ok());
  CHECK(Errno(f.MkDir(kRootInode, "d").status()) == EEXIST);
  REQUIRE(f.Lookup(kRootInode, "remote").ok());  // the kernel looks a name up before MKDIR
  CHECK(Errno(f.MkDir(kRootInode, "remote").status()) == EEXIST);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"d", "remote"});
  CHECK(f.Names(d->attr.ino) == std::vector<std::string>{"e"});
  CHECK(f.Stored("d/").status().code() == StatusCode::kNotFound);  // no marker objects
  CHECK(f.Stored("d/e/").status().code() == StatusCode::kNotFound);
  CHECK(Errno(f.RmDir(kRootInode, "d")) == ENOTEMPTY);
  auto c = f.Create(e->attr.ino, "f.txt");
  REQUIRE(c.ok());
  REQUIRE(f.Write(*c, 0, "below").ok());
  CHECK(f.Flush(*c).ok());
  f.fs->Release(c->file.fh);
  CHECK(f.Stored("d/e/f.txt").value() == "below");
  CHECK(f.Names(e->attr.ino) == std::vector<std::string>{"f.txt"});
  auto s = f.MkDir(kRootInode, "scratch");
  REQUIRE(s.ok());
  CHECK(f.RmDir(kRootInode, "scratch").ok());
  CHECK(Errno(f.Lookup(kRootInode, "scratch").status()) == ENOENT);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"d", "remote"});
}

TEST_CASE("unlink and rmdir of what S3 holds: EPERM without allow_delete, deleted with it") {
  {
    Fixture f;
    f.Put("a.txt", "a");
    f.Put("dir/b.txt", "b");
    f.Put("empty/");
    REQUIRE(f.Lookup(kRootInode, "a.txt").ok());  // the kernel looks each name up first
    REQUIRE(f.Lookup(kRootInode, "empty").ok());
    CHECK(Errno(f.Unlink(kRootInode, "a.txt")) == EPERM);
    CHECK(Errno(f.RmDir(kRootInode, "empty")) == EPERM);
    CHECK(f.Stored("a.txt").ok());
    CHECK(f.Stored("empty/").ok());
  }
  WriteOptions w;
  w.allow_delete = true;
  Fixture f(w);
  f.Put("a.txt", "a");
  f.Put("dir/b.txt", "b");
  f.Put("empty/");
  REQUIRE(f.Lookup(kRootInode, "a.txt").ok());
  auto dir = f.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  REQUIRE(f.Lookup(kRootInode, "empty").ok());
  REQUIRE(f.Lookup(dir->attr.ino, "b.txt").ok());
  CHECK(f.Unlink(kRootInode, "a.txt").ok());
  CHECK(f.Stored("a.txt").status().code() == StatusCode::kNotFound);
  CHECK(Errno(f.Lookup(kRootInode, "a.txt").status()) == ENOENT);
  CHECK(Errno(f.Unlink(kRootInode, "a.txt")) == ENOENT);
  CHECK(Errno(f.Unlink(kRootInode, "dir")) == EISDIR);
  CHECK(Errno(f.RmDir(kRootInode, "dir")) == ENOTEMPTY);
  CHECK(f.RmDir(kRootInode, "empty").ok());
  CHECK(f.Stored("empty/").status().code() == StatusCode::kNotFound);
  CHECK(f.Unlink(dir->attr.ino, "b.txt").ok());
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"dir"});  // kept while this mount shows it
  Status gone = f.RmDir(kRootInode, "dir");
  CHECK_MESSAGE(gone.ok(), gone.ToString());
  CHECK(f.Names(kRootInode).empty());
  CHECK(f.Stored("dir/b.txt").status().code() == StatusCode::kNotFound);
}

TEST_CASE("read_only: every write is EROFS, reads still work") {
  WriteOptions w;
  w.read_only = true;
  Fixture f(w);
  f.Put("a.txt", "a");
  auto a = f.Lookup(kRootInode, "a.txt");
  REQUIRE(a.ok());
  CHECK(a->attr.mode == (S_IFREG | 0444));
  CHECK(Errno(f.Create(kRootInode, "new").status()) == EROFS);
  CHECK(Errno(f.MkDir(kRootInode, "d").status()) == EROFS);
  CHECK(Errno(f.Unlink(kRootInode, "a.txt")) == EROFS);
  CHECK(Errno(f.Open(a->attr.ino, O_WRONLY).status()) == EROFS);
  CHECK(Errno(f.Truncate(a->attr.ino, 0).status()) == EROFS);
  auto r = f.Open(a->attr.ino, O_RDONLY);
  REQUIRE(r.ok());
  f.fs->Release(r->fh);
  CHECK(f.Stored("a.txt").value() == "a");
}

}  // namespace
}  // namespace reelfs::fuse

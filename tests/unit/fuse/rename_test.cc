// RENAME through the FileSystem against the in-memory FakeObjectStore (docs/semantics.md
// "Writes"): one CopyObject at or below the copy threshold, a multipart UploadPartCopy above it,
// a failed copy (the source kept, no destination, the upload aborted), a failed delete (both
// names exist, the errno says so), and every refusal with its errno.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "fuse/core/filesystem.h"
#include "fuse/core/object_copy.h"
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
using s3::Operation;

constexpr char kBucket[] = "bkt";

int Errno(const Status& s) { return StatusToErrno(s); }

// Bytes that differ at every offset, so a part copied from the wrong range shows.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return s;
}

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
    fs = CreateFileSystem(faults, options, CreateHeapBufferPool(),
                          std::make_shared<MemoryBudget>(256ull << 20), clock);
  }
  void Put(const std::string& key, std::string data) {
    fake->PutObjectForTest(kBucket, key, std::move(data));
  }
  Result<Entry> Lookup(InodeId parent, std::string_view name) {
    return Await<Entry>([&](auto cb) { fs->Lookup(parent, name, cb); });
  }
  Status Rename(InodeId parent, std::string_view name, InodeId new_parent,
                std::string_view new_name, unsigned flags = 0) {
    return AwaitStatus([&](auto cb) { fs->Rename(parent, name, new_parent, new_name, flags, cb); });
  }
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
  // What the fake store saw since the last call.
  uint64_t Calls(Operation op) { return fake->CallCount(op); }

  testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<s3::FaultInjectingStore> faults;
  std::unique_ptr<FileSystem> fs;
};

TEST_CASE("rename at or below the threshold: one CopyObject, then the source deleted") {
  Fixture f;
  const std::string data = Pattern(1000);
  f.Put("dir/a.bin", data);
  auto dir = f.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  auto a = f.Lookup(dir->attr.ino, "a.bin");
  REQUIRE(a.ok());
  f.fake->ResetCallCounts();
  REQUIRE(f.Rename(dir->attr.ino, "a.bin", kRootInode, "b.bin").ok());
  CHECK(f.Calls(Operation::kCopyObject) == 1);
  CHECK(f.Calls(Operation::kUploadPartCopy) == 0);
  CHECK(f.Calls(Operation::kDeleteObject) == 1);
  CHECK(f.Stored("b.bin").value() == data);
  CHECK(f.Stored("dir/a.bin").status().code() == StatusCode::kNotFound);
  // The inode moved with the name, as the kernel moved its dentry; the old name is gone here too.
  auto b = f.Lookup(kRootInode, "b.bin");
  REQUIRE(b.ok());
  CHECK(b->attr.ino == a->attr.ino);
  CHECK(b->attr.size == data.size());
  CHECK(Errno(f.Lookup(dir->attr.ino, "a.bin").status()) == ENOENT);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"b.bin", "dir"});
  CHECK(f.Names(dir->attr.ino).empty());
  CHECK(f.fs->counters().renames == 1);
  CHECK(f.fs->counters().copy_parts == 0);
  // Renamed back, the bytes are still the same.
  REQUIRE(f.Rename(kRootInode, "b.bin", dir->attr.ino, "a.bin").ok());
  CHECK(f.Stored("dir/a.bin").value() == data);
  CHECK(f.Stored("b.bin").status().code() == StatusCode::kNotFound);
}

TEST_CASE("rename above the threshold: a multipart copy of UploadPartCopy parts") {
  WriteOptions w;
  w.copy_threshold = 100;
  w.copy_part_size = 64;
  w.max_parts_in_flight = 3;
  Fixture f(w);
  const std::string data = Pattern(64 * 7 + 5);  // 8 parts, the last one short
  f.Put("big.bin", data);
  REQUIRE(f.Lookup(kRootInode, "big.bin").ok());
  f.fake->ResetCallCounts();
  REQUIRE(f.Rename(kRootInode, "big.bin", kRootInode, "moved.bin").ok());
  CHECK(f.Calls(Operation::kCopyObject) == 0);
  CHECK(f.Calls(Operation::kCreateMultipartUpload) == 1);
  CHECK(f.Calls(Operation::kUploadPartCopy) == 8);
  CHECK(f.Calls(Operation::kCompleteMultipartUpload) == 1);
  CHECK(f.Calls(Operation::kAbortMultipartUpload) == 0);
  CHECK(f.Stored("moved.bin").value() == data);
  CHECK(f.Stored("big.bin").status().code() == StatusCode::kNotFound);
  CHECK(f.fs->counters().copy_parts == 8);
  auto moved = f.Lookup(kRootInode, "moved.bin");
  REQUIRE(moved.ok());
  CHECK(moved->attr.size == data.size());
}

TEST_CASE("the multipart copy's part size grows so that 10 000 parts hold the object") {
  CHECK(detail::CopyPartSize(100, 10) == 10);
  CHECK(detail::CopyPartSize(10'000ull * 10, 10) == 10);
  CHECK(detail::CopyPartSize(10'000ull * 10 + 1, 10) == 20);
  const uint64_t five_tib = 5ull << 40;
  const uint64_t p = detail::CopyPartSize(five_tib, 512ull << 20);
  CHECK((five_tib + p - 1) / p <= 10'000);
  CHECK(p <= (5ull << 30));  // still a part S3 takes
}

TEST_CASE("a failed copy: the source kept, no destination, the multipart upload aborted") {
  WriteOptions w;
  w.copy_threshold = 100;
  w.copy_part_size = 64;
  Fixture f(w);
  const std::string data = Pattern(64 * 5);
  f.Put("src.bin", data);
  f.Put("small.bin", "tiny");
  REQUIRE(f.Lookup(kRootInode, "src.bin").ok());
  f.faults->SetFault(Operation::kUploadPartCopy,
                     [](const s3::RequestInfo& r) -> std::optional<Status> {
                       if (r.part_number == 3) return Status::Unavailable("injected 503");
                       return std::nullopt;
                     });
  f.fake->ResetCallCounts();
  Status s = f.Rename(kRootInode, "src.bin", kRootInode, "dst.bin");
  CHECK(Errno(s) == EIO);
  CHECK(s.message().find("UploadPartCopy part 3") != std::string::npos);
  CHECK(f.Calls(Operation::kAbortMultipartUpload) == 1);
  CHECK(f.Calls(Operation::kCompleteMultipartUpload) == 0);
  CHECK(f.Calls(Operation::kDeleteObject) == 0);
  CHECK(f.Stored("src.bin").value() == data);
  CHECK(f.Stored("dst.bin").status().code() == StatusCode::kNotFound);
  CHECK(f.Lookup(kRootInode, "src.bin").ok());
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"small.bin", "src.bin"});
  CHECK(f.fs->counters().renames == 0);

  // One CopyObject that fails the same way (below the threshold).
  f.faults->ClearFaults();
  REQUIRE(f.Lookup(kRootInode, "small.bin").ok());
  f.faults->FailNext(Operation::kCopyObject, 1, Status::Unavailable("injected 503"));
  CHECK(Errno(f.Rename(kRootInode, "small.bin", kRootInode, "other.bin")) == EIO);
  CHECK(f.Stored("small.bin").value() == "tiny");
  CHECK(f.Stored("other.bin").status().code() == StatusCode::kNotFound);
  // A failed CompleteMultipartUpload aborts too.
  f.faults->FailNext(Operation::kCompleteMultipartUpload, 1, Status::Unavailable("injected"));
  f.fake->ResetCallCounts();
  CHECK(Errno(f.Rename(kRootInode, "src.bin", kRootInode, "dst.bin")) == EIO);
  CHECK(f.Calls(Operation::kAbortMultipartUpload) == 1);
  CHECK(f.Stored("dst.bin").status().code() == StatusCode::kNotFound);
  CHECK(f.Stored("src.bin").value() == data);
  // And once the store answers again, the same rename goes through.
  REQUIRE(f.Rename(kRootInode, "src.bin", kRootInode, "dst.bin").ok());
  CHECK(f.Stored("dst.bin").value() == data);
}

TEST_CASE("a failed delete: the destination is complete, the source still there, EIO") {
  Fixture f;
  f.Put("keep.bin", "payload");
  auto src = f.Lookup(kRootInode, "keep.bin");
  REQUIRE(src.ok());
  f.faults->FailNext(Operation::kDeleteObject, 1, Status::Unavailable("injected 503"));
  Status s = f.Rename(kRootInode, "keep.bin", kRootInode, "copy.bin");
  CHECK(Errno(s) == EIO);
  CHECK(s.message().find("both exist") != std::string::npos);
  CHECK(f.Stored("keep.bin").value() == "payload");
  CHECK(f.Stored("copy.bin").value() == "payload");
  // This mount shows both, the source under its old inode.
  auto again = f.Lookup(kRootInode, "keep.bin");
  REQUIRE(again.ok());
  CHECK(again->attr.ino == src->attr.ino);
  auto copy = f.Lookup(kRootInode, "copy.bin");
  REQUIRE(copy.ok());
  CHECK(copy->attr.ino != src->attr.ino);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"copy.bin", "keep.bin"});
}

TEST_CASE("refusals: directory EXDEV, flags, NOREPLACE, overwrite, busy, archived, absent") {
  Fixture f;
  f.Put("d/x", "1");
  f.Put("a", "A");
  f.Put("b", "B");
  f.Put("cold", "C");
  REQUIRE(f.fake->ArchiveObjectForTest(kBucket, "cold").ok());
  auto d = f.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  REQUIRE(f.Lookup(kRootInode, "a").ok());
  REQUIRE(f.Lookup(kRootInode, "b").ok());
  REQUIRE(f.Lookup(kRootInode, "cold").ok());
  f.fake->ResetCallCounts();

  // A directory S3 has, and one made here: EXDEV, so mv copies and deletes.
  CHECK(Errno(f.Rename(kRootInode, "d", kRootInode, "e")) == EXDEV);
  auto local = Await<Entry>([&](auto cb) { f.fs->MkDir(kRootInode, "mine", cb); });
  REQUIRE(local.ok());
  CHECK(Errno(f.Rename(kRootInode, "mine", kRootInode, "yours")) == EXDEV);
  // RENAME_EXCHANGE (and any flag but NOREPLACE): EINVAL.
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "b", RENAME_EXCHANGE)) == EINVAL);
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "b", 1u << 2)) == EINVAL);
  // Onto an existing object: EEXIST with NOREPLACE, EPERM without --allow-overwrite.
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "b", RENAME_NOREPLACE)) == EEXIST);
  Status perm = f.Rename(kRootInode, "a", kRootInode, "b");
  CHECK(Errno(perm) == EPERM);
  CHECK(perm.message().find("--allow-overwrite") != std::string::npos);
  // Onto a directory: EISDIR.
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "d")) == EISDIR);
  // An archived source that is not restored: EACCES, saying to stage it; nothing copied.
  Status cold = f.Rename(kRootInode, "cold", kRootInode, "warm");
  CHECK(Errno(cold) == EACCES);
  CHECK(cold.message().find("reelfs stage") != std::string::npos);
  // A name no object has: ENOENT (the listing of the root says so).
  CHECK(Errno(f.Rename(kRootInode, "nothing", kRootInode, "z")) == ENOENT);
  // A new name no object can have.
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, std::string(300, 'n'))) == ENAMETOOLONG);
  // None of it changed S3.
  CHECK(f.Calls(Operation::kCopyObject) == 0);
  CHECK(f.Calls(Operation::kUploadPartCopy) == 0);
  CHECK(f.Calls(Operation::kDeleteObject) == 0);
  CHECK(f.Stored("a").value() == "A");
  CHECK(f.Stored("b").value() == "B");
  CHECK(f.Stored("d/x").value() == "1");

  // A file this mount is writing: EBUSY, as the source and as the destination.
  auto w = Await<FileSystem::CreatedFile>([&](auto cb) {
    f.fs->Create(kRootInode, "w.bin", O_WRONLY | O_CREAT, static_cast<uint32_t>(::getpid()), cb);
  });
  REQUIRE(w.ok());
  CHECK(Errno(f.Rename(kRootInode, "w.bin", kRootInode, "x.bin")) == EBUSY);
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "w.bin")) == EBUSY);
  f.fs->Release(w->file.fh);

  // Renaming a name onto itself changes nothing.
  CHECK(f.Rename(kRootInode, "a", kRootInode, "a").ok());
  CHECK(f.Stored("a").value() == "A");
}

TEST_CASE("rename onto an existing object with allow_overwrite replaces it") {
  WriteOptions w;
  w.allow_overwrite = true;
  Fixture f(w);
  f.Put("new.ckpt.tmp", "fresh");
  f.Put("ckpt", "stale");
  auto tmp = f.Lookup(kRootInode, "new.ckpt.tmp");
  REQUIRE(tmp.ok());
  auto old = f.Lookup(kRootInode, "ckpt");
  REQUIRE(old.ok());
  CHECK(Errno(f.Rename(kRootInode, "new.ckpt.tmp", kRootInode, "ckpt", RENAME_NOREPLACE)) ==
        EEXIST);
  REQUIRE(f.Rename(kRootInode, "new.ckpt.tmp", kRootInode, "ckpt").ok());
  CHECK(f.Stored("ckpt").value() == "fresh");
  CHECK(f.Stored("new.ckpt.tmp").status().code() == StatusCode::kNotFound);
  auto now = f.Lookup(kRootInode, "ckpt");
  REQUIRE(now.ok());
  CHECK(now->attr.ino == tmp->attr.ino);  // the renamed inode, not the replaced one
  CHECK(now->attr.size == 5);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"ckpt"});
}

TEST_CASE("rename into a directory made here: the file lands below it, which then exists") {
  Fixture f;
  f.Put("a.bin", "abc");
  REQUIRE(f.Lookup(kRootInode, "a.bin").ok());
  auto dir = Await<Entry>([&](auto cb) { f.fs->MkDir(kRootInode, "fresh", cb); });
  REQUIRE(dir.ok());
  REQUIRE(f.Rename(kRootInode, "a.bin", dir->attr.ino, "a.bin").ok());
  CHECK(f.Stored("fresh/a.bin").value() == "abc");
  CHECK(f.Stored("a.bin").status().code() == StatusCode::kNotFound);
  CHECK(f.Names(dir->attr.ino) == std::vector<std::string>{"a.bin"});
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"fresh"});
  auto moved = f.Lookup(dir->attr.ino, "a.bin");
  REQUIRE(moved.ok());
  CHECK(moved->attr.size == 3);
}

TEST_CASE("read_only: rename is EROFS") {
  WriteOptions w;
  w.read_only = true;
  Fixture f(w);
  f.Put("a", "A");
  REQUIRE(f.Lookup(kRootInode, "a").ok());
  CHECK(Errno(f.Rename(kRootInode, "a", kRootInode, "b")) == EROFS);
  CHECK(f.Stored("a").value() == "A");
}

// An empty new file is uploaded at its RELEASE, which the kernel sends after close returns.
struct EmptyFile {
  EmptyFile(Fixture& f, const char* name) {
    auto w = Await<FileSystem::CreatedFile>([&](auto cb) {
      f.fs->Create(kRootInode, name, O_WRONLY | O_CREAT, static_cast<uint32_t>(::getpid()), cb);
    });
    REQUIRE(w.ok());
    ino = w->entry.attr.ino;
    fh = w->file.fh;
    // The writer's close with nothing written: answered OK, nothing stored yet.
    REQUIRE(AwaitStatus([&](auto cb) {
              f.fs->Flush(ino, fh, /*fsync=*/false, static_cast<uint32_t>(::getpid()), cb);
            }).ok());
  }
  InodeId ino = 0;
  uint64_t fh = 0;
};

std::future<Status> StartRename(Fixture& f, const char* from, const char* to) {
  auto answer = std::make_shared<std::promise<Status>>();
  f.fs->Rename(kRootInode, from, kRootInode, to, 0,
               [answer](Status s) { answer->set_value(std::move(s)); });
  return answer->get_future();
}

TEST_CASE("a rename between an empty file's close and its RELEASE waits for the upload") {
  // Patience far beyond the test's own steps, which a loaded machine under TSan can stretch past
  // the default 2 s: the RELEASE, not the timeout, must be what lets the rename go on.
  WriteOptions w;
  w.release_wait = std::chrono::seconds(120);
  Fixture f(w);
  EmptyFile e(f, "e.bin");
  std::future<Status> renamed = StartRename(f, "e.bin", "f.bin");
  // Not answered while the upload waits for the RELEASE (not EBUSY, as before).
  CHECK(renamed.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  CHECK(f.Stored("e.bin").status().code() == StatusCode::kNotFound);
  f.fs->Release(e.fh);  // uploads the empty object, then the rename goes on
  REQUIRE(renamed.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const Status status = renamed.get();
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  Result<std::string> stored = f.Stored("f.bin");
  REQUIRE_MESSAGE(stored.ok(), stored.status().ToString());
  CHECK(stored->empty());
  CHECK(f.Stored("e.bin").status().code() == StatusCode::kNotFound);
  CHECK(f.Names(kRootInode) == std::vector<std::string>{"f.bin"});
}

TEST_CASE("an empty file released, its upload slower than release_wait: the rename waits for it") {
  // A loaded server's PUT (fsync) can outlast the patience, which is only for a RELEASE that never
  // comes: once it came, the rename waits for the upload's answer and goes on.
  WriteOptions w;
  w.release_wait = std::chrono::milliseconds(50);
  Fixture f(w);
  EmptyFile e(f, "e.bin");
  f.faults->SetLatency(s3::Operation::kPutObject, std::chrono::milliseconds(600));
  f.fs->Release(e.fh);  // the PUT starts and takes 600 ms, twelve times the patience
  std::future<Status> renamed = StartRename(f, "e.bin", "f.bin");
  REQUIRE(renamed.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const Status status = renamed.get();
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  CHECK(f.Stored("f.bin").value().empty());
  CHECK(f.Stored("e.bin").status().code() == StatusCode::kNotFound);
}

TEST_CASE("an empty file never released: the waiting rename gets EBUSY after release_wait") {
  WriteOptions w;
  w.release_wait = std::chrono::milliseconds(100);
  Fixture f(w);
  EmptyFile e(f, "e.bin");
  const auto start = std::chrono::steady_clock::now();
  std::future<Status> renamed = StartRename(f, "e.bin", "f.bin");
  REQUIRE(renamed.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(100));
  CHECK(Errno(renamed.get()) == EBUSY);
  // As the destination too.
  f.Put("a", "A");
  REQUIRE(f.Lookup(kRootInode, "a").ok());
  CHECK(Errno(StartRename(f, "a", "e.bin").get()) == EBUSY);
  // The writer writes after all (its close was of a dup): a rename is EBUSY at once.
  const std::string byte = "x";
  REQUIRE(Await<size_t>([&](auto cb) {
            f.fs->Write(e.ino, e.fh, 0, std::as_bytes(std::span(byte)), cb);
          }).ok());
  std::future<Status> busy = StartRename(f, "e.bin", "f.bin");
  REQUIRE(busy.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready);
  CHECK(Errno(busy.get()) == EBUSY);
  f.fs->Release(e.fh);  // completes the upload in the background: wait for the object
  Result<std::string> stored = f.Stored("e.bin");
  for (int i = 0; i < 6000 && !stored.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stored = f.Stored("e.bin");
  }
  REQUIRE_MESSAGE(stored.ok(), stored.status().ToString());
  CHECK(*stored == "x");
  CHECK(f.Stored("a").value() == "A");
}

}  // namespace
}  // namespace reelfs::fuse

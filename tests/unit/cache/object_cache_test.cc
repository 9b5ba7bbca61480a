// ObjectCache: blocks stored and read back, the size limit and LRU eviction, the free-space floor,
// one version per key, persistence across reopen, the directory lock, corruption and torn blocks
// never served, and a crash (a failed or torn write) at every step of a sequence of stores.

#include "cache/object_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_contents.h"
#include "cache/fake/faulty_cache_files.h"
#include "doctest/doctest.h"
#include "tests/fakes/temp_dir.h"

namespace reelfs::cache {
namespace {

using testing::TempDir;

constexpr uint64_t kBlock = 4096;

std::vector<std::byte> Bytes(uint64_t size, uint8_t seed) {
  std::vector<std::byte> out(size);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::byte>(x >> 24);
  }
  return out;
}

CacheOptions Options(uint64_t max_bytes = 1 << 20) {
  CacheOptions o;
  o.max_bytes = max_bytes;
  o.block_size = kBlock;
  o.min_free_bytes = 0;
  return o;
}

std::shared_ptr<ObjectCache> OpenOk(const std::string& dir, CacheOptions options,
                                    std::shared_ptr<CacheFiles> files = PosixCacheFiles()) {
  auto cache = ObjectCache::Open(dir, options, std::move(files));
  REQUIRE_MESSAGE(cache.ok(), cache.status().ToString());
  return *cache;
}

// Reads [offset, offset + size) from the cache; empty on any error.
std::vector<std::byte> ReadBack(ObjectCache& cache, const CacheKey& key, uint64_t offset,
                                uint64_t size) {
  std::vector<std::byte> out(size);
  if (!cache.Read(key, offset, out).ok()) return {};
  return out;
}

std::vector<std::byte> Slice(const std::vector<std::byte>& v, uint64_t offset, uint64_t size) {
  return {v.begin() + static_cast<ptrdiff_t>(offset),
          v.begin() + static_cast<ptrdiff_t>(offset + size)};
}

TEST_CASE("blocks stored are read back exactly, at any offset, and coverage is per block") {
  TempDir dir("reelfs-cache");
  auto cache = OpenOk(dir.path, Options());
  const CacheKey key{"bkt", "a/b", "etag1"};
  const auto data = Bytes(10 * kBlock + 123, 1);  // a short last block
  CHECK_FALSE(cache->Covers(key, 0, 1));

  // Blocks 2..4 only (an unaligned end stores no partial block).
  REQUIRE(cache->Store(key, data.size(), 2 * kBlock, Slice(data, 2 * kBlock, 3 * kBlock + 7)).ok());
  CHECK(cache->Covers(key, 2 * kBlock, 3 * kBlock));
  CHECK_FALSE(cache->Covers(key, 2 * kBlock, 3 * kBlock + 1));
  CHECK_FALSE(cache->Covers(key, kBlock, 2));
  CHECK(cache->CachedBytes(key) == 3 * kBlock);
  CHECK(ReadBack(*cache, key, 2 * kBlock + 100, 2 * kBlock) ==
        Slice(data, 2 * kBlock + 100, 2 * kBlock));
  std::vector<std::byte> ten(10);
  CHECK(cache->Read(key, kBlock, ten).code() == StatusCode::kNotFound);

  // The rest, including the short last block: complete.
  REQUIRE(cache->Store(key, data.size(), 0, data).ok());
  CHECK(cache->Complete(key));
  CHECK(cache->CachedBytes(key) == data.size());
  CHECK(ReadBack(*cache, key, 0, data.size()) == data);
  CHECK(ReadBack(*cache, key, data.size() - 5, 5) == Slice(data, data.size() - 5, 5));
  // Another ETag is another version: not covered.
  CHECK_FALSE(cache->Covers(CacheKey{"bkt", "a/b", "etag2"}, 0, 1));
  CHECK(cache->stats().hit_bytes > 0);
  CHECK(cache->Store(key, data.size(), 5, data).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a new version of a key replaces the old one") {
  TempDir dir("reelfs-cache");
  auto cache = OpenOk(dir.path, Options());
  const auto v1 = Bytes(3 * kBlock, 1);
  const auto v2 = Bytes(2 * kBlock, 2);
  REQUIRE(cache->Store({"b", "k", "e1"}, v1.size(), 0, v1).ok());
  REQUIRE(cache->Store({"b", "k", "e2"}, v2.size(), 0, v2).ok());
  CHECK_FALSE(cache->ObjectSize({"b", "k", "e1"}).has_value());
  CHECK(ReadBack(*cache, {"b", "k", "e2"}, 0, v2.size()) == v2);
  CHECK(cache->stats().bytes == v2.size());
  CHECK(cache->stats().objects == 1);
}

TEST_CASE("the size limit holds: least recently used objects are evicted whole") {
  TempDir dir("reelfs-cache");
  auto cache = OpenOk(dir.path, Options(10 * kBlock));
  const auto a = Bytes(4 * kBlock, 1), b = Bytes(4 * kBlock, 2), c = Bytes(4 * kBlock, 3);
  REQUIRE(cache->Store({"x", "a", "1"}, a.size(), 0, a).ok());
  REQUIRE(cache->Store({"x", "b", "1"}, b.size(), 0, b).ok());
  CHECK(ReadBack(*cache, {"x", "a", "1"}, 0, kBlock) == Slice(a, 0, kBlock));  // a is now recent
  REQUIRE(cache->Store({"x", "c", "1"}, c.size(), 0, c).ok());
  CHECK(cache->Complete({"x", "a", "1"}));
  CHECK_FALSE(cache->ObjectSize({"x", "b", "1"}).has_value());  // b was least recently used
  CHECK(cache->Complete({"x", "c", "1"}));
  CHECK(cache->stats().bytes <= 10 * kBlock);
  CHECK(cache->stats().evicted_objects == 1);
  // An object larger than the cache is not cached at all.
  const auto big = Bytes(11 * kBlock, 4);
  REQUIRE(cache->Store({"x", "big", "1"}, big.size(), 0, big).ok());
  CHECK_FALSE(cache->ObjectSize({"x", "big", "1"}).has_value());
  CHECK(cache->Complete({"x", "a", "1"}));
  // The files on disk never hold more than the limit either.
  uint64_t on_disk = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path + "/data")) {
    on_disk += f.file_size();
  }
  CHECK(on_disk <= 10 * kBlock);
}

TEST_CASE("the free-space floor: evict to stay above it, skip the store when nothing is left") {
  TempDir dir("reelfs-cache");
  auto files = std::make_shared<FaultyCacheFiles>(PosixCacheFiles());
  CacheOptions options = Options();
  options.min_free_bytes = 100 * kBlock;
  auto cache = OpenOk(dir.path, options, files);
  const auto a = Bytes(4 * kBlock, 1);
  files->SetFreeBytes(200 * kBlock);
  REQUIRE(cache->Store({"x", "a", "1"}, a.size(), 0, a).ok());
  CHECK(cache->Complete({"x", "a", "1"}));
  files->SetFreeBytes(101 * kBlock);  // below the floor once 4 blocks more are written
  const auto b = Bytes(4 * kBlock, 2);
  REQUIRE(cache->Store({"x", "b", "1"}, b.size(), 0, b).ok());  // skipped, not an error
  CHECK_FALSE(cache->ObjectSize({"x", "b", "1"}).has_value());
  CHECK_FALSE(cache->ObjectSize({"x", "a", "1"}).has_value());  // evicted trying to make room
  CHECK(cache->stats().stores_skipped == 1);
}

TEST_CASE("a full or read-only disk skips the store and serves nothing wrong") {
  TempDir dir("reelfs-cache");
  auto files = std::make_shared<FaultyCacheFiles>(PosixCacheFiles());
  auto cache = OpenOk(dir.path, Options(), files);
  const auto a = Bytes(4 * kBlock, 1);
  for (int err : {ENOSPC, EROFS}) {
    files->FailWritesWith(err);
    Status s = cache->Store({"x", "a", "1"}, a.size(), 0, a);
    CHECK_FALSE(s.ok());
    CHECK(s.detail().sys_errno == err);
    CHECK_FALSE(cache->Covers({"x", "a", "1"}, 0, 1));
    CHECK(cache->stats().bytes == 0);
  }
  files->FailWritesWith(0);
  REQUIRE(cache->Store({"x", "a", "1"}, a.size(), 0, a).ok());
  CHECK(ReadBack(*cache, {"x", "a", "1"}, 0, a.size()) == a);
  CHECK(cache->stats().store_failures == 2);
}

TEST_CASE("the index survives a reopen, with its LRU order; the directory is locked while open") {
  TempDir dir("reelfs-cache");
  const auto a = Bytes(3 * kBlock + 5, 1), b = Bytes(2 * kBlock, 2);
  {
    auto cache = OpenOk(dir.path, Options());
    REQUIRE(cache->Store({"x", "a", "1"}, a.size(), 0, a).ok());
    REQUIRE(cache->Store({"x", "b", "1"}, b.size(), 0, Slice(b, 0, kBlock)).ok());
    auto second = ObjectCache::Open(dir.path, Options());
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().code() == StatusCode::kFailedPrecondition);
    CHECK(std::string(second.status().message()).find("in use by another reelfs process") !=
          std::string::npos);
    CHECK(std::string(second.status().message()).find(std::to_string(::getpid())) !=
          std::string::npos);
  }
  auto cache = OpenOk(dir.path, Options());
  CHECK(cache->Complete({"x", "a", "1"}));
  CHECK(ReadBack(*cache, {"x", "a", "1"}, 0, a.size()) == a);
  CHECK(cache->Covers({"x", "b", "1"}, 0, kBlock));
  CHECK_FALSE(cache->Covers({"x", "b", "1"}, kBlock, 1));
  CHECK(cache->stats().bytes == a.size() + kBlock);
}

TEST_CASE("a cache file corrupted, truncated or deleted behind the cache is never served") {
  TempDir dir("reelfs-cache");
  const auto a = Bytes(4 * kBlock, 1);
  const CacheKey key{"x", "a", "1"};
  auto data_file = [&] {
    for (const auto& f : std::filesystem::directory_iterator(dir.path + "/data")) return f.path();
    return std::filesystem::path();
  };
  auto cache = OpenOk(dir.path, Options());

  SUBCASE("one byte flipped") {
    REQUIRE(cache->Store(key, a.size(), 0, a).ok());
    {
      std::fstream f(data_file(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(2 * kBlock + 17);
      f.put(static_cast<char>(~static_cast<unsigned char>(a[2 * kBlock + 17])));
    }
    std::vector<std::byte> out(a.size());
    CHECK(cache->Read(key, 0, out).code() == StatusCode::kDataLoss);
    CHECK_FALSE(cache->Covers(key, 0, 1));  // dropped whole
    CHECK(cache->stats().dropped_objects == 1);
  }
  SUBCASE("deleted") {
    REQUIRE(cache->Store(key, a.size(), 0, a).ok());
    std::filesystem::remove(data_file());
    std::vector<std::byte> out(kBlock);
    CHECK(cache->Read(key, 0, out).code() == StatusCode::kNotFound);
    CHECK_FALSE(cache->Covers(key, 0, 1));
  }
  SUBCASE("truncated, then reopened: the torn blocks are gone from the index") {
    REQUIRE(cache->Store(key, a.size(), 0, a).ok());
    std::filesystem::resize_file(data_file(), 2 * kBlock + 1);
    cache.reset();
    cache = OpenOk(dir.path, Options());
    CHECK(cache->Covers(key, 0, 2 * kBlock));
    CHECK_FALSE(cache->Covers(key, 2 * kBlock, 1));
    CHECK(ReadBack(*cache, key, 0, 2 * kBlock) == Slice(a, 0, 2 * kBlock));
  }
  SUBCASE("the index itself overwritten with garbage: an empty cache, stray files swept") {
    REQUIRE(cache->Store(key, a.size(), 0, a).ok());
    cache.reset();
    std::ofstream(dir.path + "/index.sqlite", std::ios::trunc) << std::string(8192, 'z');
    std::filesystem::remove(dir.path + "/index.sqlite-wal");
    cache = OpenOk(dir.path, Options());
    CHECK_FALSE(cache->Covers(key, 0, 1));
    CHECK(std::filesystem::is_empty(dir.path + "/data"));
    REQUIRE(cache->Store(key, a.size(), 0, a).ok());
    CHECK(ReadBack(*cache, key, 0, a.size()) == a);
  }
}

TEST_CASE("another application's SQLite file as the index is refused, never touched") {
  TempDir dir("reelfs-cache");
  { auto cache = OpenOk(dir.path, Options()); }
  // Re-stamp the index with another application id.
  REQUIRE(std::system(("sqlite3 " + dir.path + "/index.sqlite 'PRAGMA application_id=7' >/dev/null")
                          .c_str()) == 0);
  auto cache = ObjectCache::Open(dir.path, Options());
  REQUIRE_FALSE(cache.ok());
  CHECK(std::string(cache.status().message()).find("not a reelfs cache index") !=
        std::string::npos);
}

TEST_CASE("OpenWhole: a descriptor of a whole object's file, verified once, again when changed") {
  TempDir dir("reelfs-cache");
  auto cache = OpenOk(dir.path, Options());
  const CacheKey key{"x", "w", "1"};
  const auto a = Bytes(5 * kBlock + 9, 1);
  REQUIRE(cache->Store(key, a.size(), 0, Slice(a, 0, 2 * kBlock)).ok());
  CHECK(cache->OpenWhole(key).status().code() == StatusCode::kNotFound);  // not whole yet
  REQUIRE(cache->Store(key, a.size(), 0, a).ok());
  auto read_fd = [&](int fd) {
    std::vector<std::byte> out(a.size() + 10);
    const ssize_t n = ::pread(fd, out.data(), out.size(), 0);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  };
  {
    auto fd = cache->OpenWhole(key);
    REQUIRE(fd.ok());
    CHECK(read_fd(fd->get()) == a);
    CHECK(cache->stats().verified_bytes == a.size());
  }
  {
    auto fd = cache->OpenWhole(key);  // the same file: not read again
    REQUIRE(fd.ok());
    CHECK(cache->stats().verified_bytes == a.size());
    CHECK(cache->stats().whole_opens == 2);
  }
  // Nor after a remount: the verification is in the index.
  cache.reset();
  cache = OpenOk(dir.path, Options());
  {
    auto fd = cache->OpenWhole(key);
    REQUIRE(fd.ok());
    CHECK(read_fd(fd->get()) == a);
    CHECK(cache->stats().verified_bytes == 0);
  }
  // The asynchronous form: inline for a verified file, on the cache's thread for a new one.
  {
    const std::thread::id caller = std::this_thread::get_id();
    std::promise<std::pair<bool, std::thread::id>> known;
    cache->OpenWholeAsync(key, [&](Result<UniqueFd> fd) {
      known.set_value({fd.ok(), std::this_thread::get_id()});
    });
    auto [ok, thread] = known.get_future().get();
    CHECK(ok);
    CHECK(thread == caller);
    const CacheKey other{"x", "w2", "1"};
    REQUIRE(cache->Store(other, a.size(), 0, a).ok());
    std::promise<std::pair<bool, std::thread::id>> fresh;
    cache->OpenWholeAsync(other, [&](Result<UniqueFd> fd) {
      fresh.set_value({fd.ok(), std::this_thread::get_id()});
    });
    auto [ok2, thread2] = fresh.get_future().get();
    CHECK(ok2);
    CHECK(thread2 != caller);
    CHECK(cache->stats().verified_bytes == a.size());
  }
  // Changed behind the cache (a new mtime): verified again, and refused.
  std::filesystem::path file;
  for (const auto& f : std::filesystem::directory_iterator(dir.path + "/data")) file = f.path();
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * kBlock + 1);
    f.put('#');
  }
  std::filesystem::last_write_time(
      file, std::filesystem::last_write_time(file) + std::chrono::seconds(5));
  auto bad = cache->OpenWhole(key);
  CHECK(bad.status().code() == StatusCode::kDataLoss);
  CHECK_FALSE(cache->Covers(key, 0, 1));
  CHECK(cache->stats().dropped_objects == 1);
}

TEST_CASE("ReadCacheContents: what the index holds, read while the cache is open elsewhere") {
  TempDir dir("reelfs-cache");
  CHECK(ReadCacheContents(dir.path, "x").status().code() == StatusCode::kNotFound);
  auto cache = OpenOk(dir.path, Options());
  const auto a = Bytes(3 * kBlock + 5, 1), b = Bytes(4 * kBlock, 2);
  REQUIRE(cache->Store({"x", "a", "e1"}, a.size(), 0, a).ok());
  REQUIRE(cache->Store({"x", "b", "e2"}, b.size(), kBlock, Slice(b, kBlock, 2 * kBlock)).ok());
  REQUIRE(cache->Store({"y", "c", "e3"}, a.size(), 0, a).ok());
  auto contents = ReadCacheContents(dir.path, "x");  // the cache (and its lock) still open
  REQUIRE_MESSAGE(contents.ok(), contents.status().ToString());
  REQUIRE(contents->size() == 2);
  CHECK(contents->at("a").etag == "e1");
  CHECK(contents->at("a").whole);
  CHECK(contents->at("a").cached_bytes == a.size());
  CHECK_FALSE(contents->at("b").whole);
  CHECK(contents->at("b").cached_bytes == 2 * kBlock);
  CHECK(contents->at("b").size == b.size());
}

// The crash-consistency property: whatever prefix of a sequence of stores (and evictions) ran
// before the process died, the last write possibly torn in half, a reopened cache serves only
// the objects' own bytes, and stores work again.
TEST_CASE("a crash at every step of a sequence of stores never leads to a wrong byte") {
  const std::vector<std::pair<std::string, std::vector<std::byte>>> objects = {
      {"a", Bytes(3 * kBlock + 11, 1)},
      {"b", Bytes(5 * kBlock, 2)},
      {"c", Bytes(2 * kBlock + 1, 3)},
      {"a", Bytes(4 * kBlock, 4)},  // a new version of a
      {"d", Bytes(6 * kBlock, 5)}};
  auto run = [&](ObjectCache& cache) {
    for (size_t i = 0; i < objects.size(); ++i) {
      const auto& [name, data] = objects[i];
      const CacheKey key{"x", name, std::to_string(i)};
      // In two stores: the second half first, as readers do.
      cache.Store(key, data.size(), 2 * kBlock, Slice(data, 2 * kBlock, data.size() - 2 * kBlock))
          .IgnoreError();
      cache.Store(key, data.size(), 0, data).IgnoreError();
    }
  };
  // How many mutating file calls a whole run makes (the limit forces evictions).
  int total = 0;
  {
    TempDir dir("reelfs-cache");
    auto files = std::make_shared<FaultyCacheFiles>(PosixCacheFiles());
    auto cache = OpenOk(dir.path, Options(12 * kBlock), files);
    run(*cache);
    total = files->mutating_calls();
  }
  REQUIRE(total > 8);
  for (int step = 0; step <= total; ++step) {
    for (bool tear : {false, true}) {
      CAPTURE(step);
      CAPTURE(tear);
      TempDir dir("reelfs-cache");
      {
        auto files = std::make_shared<FaultyCacheFiles>(PosixCacheFiles());
        files->CrashAfter(step, tear);
        auto cache = OpenOk(dir.path, Options(12 * kBlock), files);
        run(*cache);
      }  // the "crash": nothing more is written
      auto cache = OpenOk(dir.path, Options(12 * kBlock));
      for (size_t i = 0; i < objects.size(); ++i) {
        const auto& [name, data] = objects[i];
        const CacheKey key{"x", name, std::to_string(i)};
        for (uint64_t b = 0; b * kBlock < data.size(); ++b) {
          const uint64_t len = std::min<uint64_t>(kBlock, data.size() - b * kBlock);
          if (!cache->Covers(key, b * kBlock, len)) continue;
          std::vector<std::byte> out(len);
          Status s = cache->Read(key, b * kBlock, out);
          // A block may be refused (torn: dropped), never answered wrongly.
          if (s.ok()) CHECK(out == Slice(data, b * kBlock, len));
        }
      }
      CHECK(cache->stats().bytes <= 12 * kBlock);
      run(*cache);
      const auto& [name, data] = objects.back();
      CHECK(ReadBack(*cache, {"x", name, std::to_string(objects.size() - 1)}, 0, data.size()) ==
            data);
    }
  }
}

}  // namespace
}  // namespace reelfs::cache

// CachingStore over the fake store: a stream of ranged GETs fills the cache (unaligned ranges
// widened to whole blocks), the second pass never reaches the server, an archived object whose
// blocks are cached still reads, a corrupted cache falls back to the server, GETs the cache
// cannot key (no If-Match) pass through, and GETs into a sink fill it (within their copy budget)
// and are served from it.

#include "cache/caching_store.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "tests/fakes/forwarding_store.h"
#include "tests/fakes/temp_dir.h"

namespace reelfs::cache {
namespace {

using testing::TempDir;

constexpr uint64_t kBlock = 64 << 10;

class CountingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  void GetObject(const s3::GetObjectRequest& r, s3::Callback<s3::GetObjectResult> done) override {
    ++gets;
    if (r.range) bytes_asked += r.range->length;
    inner_->GetObject(r, std::move(done));
  }
  std::atomic<int> gets{0};
  std::atomic<uint64_t> bytes_asked{0};
};

struct Fixture {
  TempDir dir{"reelfs-caching-store"};
  std::shared_ptr<s3::FakeObjectStore> fake = std::make_shared<s3::FakeObjectStore>();
  std::shared_ptr<CountingStore> counting = std::make_shared<CountingStore>(fake);
  std::shared_ptr<ObjectCache> cache;
  std::shared_ptr<s3::ObjectStore> store;

  explicit Fixture(uint64_t max_bytes = 64 << 20) {
    CacheOptions options;
    options.block_size = kBlock;
    options.max_bytes = max_bytes;
    options.min_free_bytes = 0;
    auto opened = ObjectCache::Open(dir.path, options);
    REQUIRE(opened.ok());
    cache = *opened;
    store = CreateCachingStore(counting, cache);
  }

  Result<std::vector<std::byte>> Get(const std::string& key, uint64_t offset, uint64_t length,
                                     const std::string& etag) {
    std::vector<std::byte> buf(length);
    s3::GetObjectRequest req;
    req.bucket = "b";
    req.key = key;
    req.range = s3::ByteRange{offset, length};
    req.buffer = buf;
    req.if_match = etag;
    auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { store->GetObject(req, cb); });
    if (!r.ok()) return r.status();
    buf.resize(r->bytes);
    return buf;
  }
};

std::string Content(uint64_t size, char seed) {
  std::string s(size, '\0');
  for (uint64_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + i * 7 + i / 4099);
  return s;
}

std::vector<std::byte> Slice(const std::string& s, uint64_t offset, uint64_t length) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data()) + offset;
  return {p, p + std::min<uint64_t>(length, s.size() - offset)};
}

// Reads the object as the prefetcher does: a small unaligned first request, then parts.
void ReadLikeAStream(Fixture& f, const std::string& key, const std::string& data,
                     const std::string& etag) {
  uint64_t at = 0;
  uint64_t piece = kBlock + 1000;  // unaligned, as initial_request is
  while (at < data.size()) {
    const uint64_t len = std::min<uint64_t>(piece, data.size() - at);
    auto got = f.Get(key, at, len, etag);
    REQUIRE(got.ok());
    CHECK(*got == Slice(data, at, len));
    at += len;
    piece = 3 * kBlock;
  }
}

TEST_CASE("epoch 2 of a streamed object costs no GET; every byte is the object's") {
  Fixture f;
  const std::string data = Content(10 * kBlock + 333, 'a');
  const std::string etag = f.fake->PutObjectForTest("b", "obj", data);
  ReadLikeAStream(f, "obj", data, etag);
  const int first_pass = f.counting->gets;
  CHECK(first_pass > 0);
  CHECK(f.cache->Complete({"b", "obj", etag}));
  ReadLikeAStream(f, "obj", data, etag);
  // Random reads too, anywhere.
  for (uint64_t off :
       {uint64_t{0}, uint64_t{5}, kBlock - 1, 7 * kBlock + 3, uint64_t{data.size() - 1}}) {
    auto got = f.Get("obj", off, 1000, etag);
    REQUIRE(got.ok());
    CHECK(*got == Slice(data, off, 1000));
  }
  CHECK(f.counting->gets == first_pass);
}

TEST_CASE("a cached object reads while the server says it is archived") {
  Fixture f;
  const std::string data = Content(3 * kBlock, 'q');
  const std::string etag = f.fake->PutObjectForTest("b", "tape", data);
  ReadLikeAStream(f, "tape", data, etag);
  // The same bytes, now in an archive class: the server refuses GETs (InvalidObjectState).
  const std::string archived = f.fake->PutObjectForTest("b", "tape", data, "GLACIER");
  REQUIRE(archived == etag);
  const int before = f.counting->gets;
  auto got = f.Get("tape", 0, data.size(), etag);
  REQUIRE(got.ok());
  CHECK(*got == Slice(data, 0, data.size()));
  CHECK(f.counting->gets == before);
  // A block not cached still goes to the server, and gets its answer.
  Fixture g;
  g.fake->PutObjectForTest("b", "tape", data, "GLACIER");
  auto refused = g.Get("tape", 0, 10, etag);
  CHECK(refused.status().reason() == StatusReason::kArchived);
}

TEST_CASE("a corrupted cache file is detected and the read goes to the server") {
  Fixture f;
  const std::string data = Content(4 * kBlock, 'z');
  const std::string etag = f.fake->PutObjectForTest("b", "c", data);
  ReadLikeAStream(f, "c", data, etag);
  for (const auto& file : std::filesystem::directory_iterator(f.dir.path + "/data")) {
    std::fstream s(file.path(), std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(kBlock + 10);
    s.put('!');
  }
  const int before = f.counting->gets;
  auto got = f.Get("c", 0, data.size(), etag);
  REQUIRE(got.ok());
  CHECK(*got == Slice(data, 0, data.size()));
  CHECK(f.counting->gets == before + 1);
  CHECK(f.cache->stats().dropped_objects == 1);
  CHECK(f.cache->Complete({"b", "c", etag}));  // refilled by that GET
}

// A GET into a sink (the side channel's READs over HTTP), the bytes it hands over collected.
Result<std::vector<std::byte>> SinkGet(Fixture& f, const std::string& key, uint64_t offset,
                                       uint64_t length, const std::string& etag) {
  std::vector<std::byte> got;
  s3::GetObjectRequest req;
  req.bucket = "b";
  req.key = key;
  req.range = s3::ByteRange{offset, length};
  req.if_match = etag;
  req.sink = [&](std::span<const std::byte> piece) {
    got.insert(got.end(), piece.begin(), piece.end());
    return Status::Ok();
  };
  auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { f.store->GetObject(req, cb); });
  if (!r.ok()) return r.status();
  return got;
}

TEST_CASE("GETs without If-Match pass through; a sink fills the cache and is served from it") {
  Fixture f;
  const std::string data = Content(2 * kBlock, 'k');
  const std::string etag = f.fake->PutObjectForTest("b", "s", data);
  auto unpinned = f.Get("s", 0, data.size(), "");
  REQUIRE(unpinned.ok());
  CHECK_FALSE(f.cache->Covers({"b", "s", etag}, 0, 1));

  // Not covered: one GET of exactly the range (not widened: the sink takes what it asked for),
  // and its whole blocks stored: block 1 (the object's last), not block 0 (begun at 100).
  int before = f.counting->gets;
  uint64_t asked = f.counting->bytes_asked;
  auto got = SinkGet(f, "s", 100, data.size() - 100, etag);
  REQUIRE(got.ok());
  CHECK(*got == Slice(data, 100, data.size() - 100));
  CHECK(f.counting->gets == before + 1);
  CHECK(f.counting->bytes_asked == asked + data.size() - 100);
  CHECK(f.cache->Covers({"b", "s", etag}, kBlock, kBlock));
  CHECK_FALSE(f.cache->Covers({"b", "s", etag}, 0, 1));
  // Covered now: served by the cache, no GET.
  before = f.counting->gets;
  got = SinkGet(f, "s", kBlock + 7, kBlock - 7, etag);
  REQUIRE(got.ok());
  CHECK(*got == Slice(data, kBlock + 7, kBlock - 7));
  CHECK(f.counting->gets == before);

  // A small object read whole into a sink is stored whole (its one, short block).
  const std::string small = Content(5000, 's');
  const std::string small_etag = f.fake->PutObjectForTest("b", "small", small);
  got = SinkGet(f, "small", 0, small.size(), small_etag);
  REQUIRE(got.ok());
  CHECK(*got == Slice(small, 0, small.size()));
  CHECK(f.cache->Complete({"b", "small", small_etag}));

  // A version replaced at the server: the GET fails (If-Match), nothing is stored.
  const std::string other = Content(kBlock, 'o');
  const std::string old_etag = f.fake->PutObjectForTest("b", "o", Content(kBlock, 'p'));
  f.fake->PutObjectForTest("b", "o", other);
  auto refused = SinkGet(f, "o", 0, kBlock, old_etag);
  CHECK_FALSE(refused.ok());
  CHECK_FALSE(f.cache->ObjectSize({"b", "o", old_etag}).has_value());
}

TEST_CASE("a sink GET larger than the copy budget passes through unstored") {
  Fixture f(1ull << 30);              // room for the object: only the budget stops the store
  const uint64_t size = 65ull << 20;  // over the 64 MiB of copies in flight
  const std::string etag = f.fake->PutGeneratedObjectForTest("b", "big", size);
  auto got = SinkGet(f, "big", 0, size, etag);
  REQUIRE(got.ok());
  CHECK(got->size() == size);
  CHECK_FALSE(f.cache->ObjectSize({"b", "big", etag}).has_value());
  // And the budget came back: a GET within it is stored.
  REQUIRE(SinkGet(f, "big", 0, 2 * kBlock, etag).ok());
  CHECK(f.cache->Covers({"b", "big", etag}, 0, 2 * kBlock));
}

TEST_CASE("failed sink GETs give their copy budget back") {
  Fixture f(1ull << 30);
  const uint64_t size = 40ull << 20;
  const std::string etag = f.fake->PutGeneratedObjectForTest("b", "big", size);
  // Three sinks that refuse the body part-way and three GETs with a stale ETag: 240 MiB asked in
  // all, each within the 64 MiB budget alone, so a leak on either path would exhaust it.
  for (int i = 0; i < 3; ++i) {
    uint64_t taken = 0;
    s3::GetObjectRequest req;
    req.bucket = "b";
    req.key = "big";
    req.range = s3::ByteRange{0, size};
    req.if_match = etag;
    req.sink = [&](std::span<const std::byte> piece) {
      taken += piece.size();
      return taken > (4u << 20) ? Status::Cancelled("the client went away (test)") : Status::Ok();
    };
    auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { f.store->GetObject(req, cb); });
    CHECK_FALSE(r.ok());
    CHECK_FALSE(SinkGet(f, "big", 0, size, "\"stale\"").ok());
  }
  CHECK_FALSE(f.cache->ObjectSize({"b", "big", etag}).has_value());
  // The budget is whole again: a GET of 40 MiB is stored.
  auto got = SinkGet(f, "big", 0, size, etag);
  REQUIRE(got.ok());
  CHECK(got->size() == size);
  CHECK(f.cache->Complete({"b", "big", etag}));
}

}  // namespace
}  // namespace reelfs::cache

// CachingStore over the fake store: a stream of ranged GETs fills the cache (unaligned ranges
// widened to whole blocks), the second pass never reaches the server, an archived object whose
// blocks are cached still reads, a corrupted cache falls back to the server, and GETs the cache
// cannot key (no If-Match) or serve (a sink it does not cover) pass through.

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

  Fixture() {
    CacheOptions options;
    options.block_size = kBlock;
    options.max_bytes = 64 << 20;
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

TEST_CASE("GETs without If-Match pass through; a sink is served when covered") {
  Fixture f;
  const std::string data = Content(2 * kBlock, 'k');
  const std::string etag = f.fake->PutObjectForTest("b", "s", data);
  auto unpinned = f.Get("s", 0, data.size(), "");
  REQUIRE(unpinned.ok());
  CHECK_FALSE(f.cache->Covers({"b", "s", etag}, 0, 1));

  // A sink the cache does not cover: passed through, nothing stored.
  auto sink_get = [&] {
    std::vector<std::byte> got;
    s3::GetObjectRequest req;
    req.bucket = "b";
    req.key = "s";
    req.range = s3::ByteRange{100, data.size() - 100};
    req.if_match = etag;
    req.sink = [&](std::span<const std::byte> piece) {
      got.insert(got.end(), piece.begin(), piece.end());
      return Status::Ok();
    };
    auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { f.store->GetObject(req, cb); });
    REQUIRE(r.ok());
    CHECK(got == Slice(data, 100, data.size() - 100));
  };
  int before = f.counting->gets;
  sink_get();
  CHECK(f.counting->gets == before + 1);
  CHECK_FALSE(f.cache->Covers({"b", "s", etag}, 0, 1));
  ReadLikeAStream(f, "s", data, etag);
  before = f.counting->gets;
  sink_get();
  CHECK(f.counting->gets == before);
}

}  // namespace
}  // namespace reelfs::cache

// Prefetcher over a DataChannel (`reelfs mount --rdma`) with a fake channel and a fake registrar:
// parts in registered buffers go through the channel and land in place, the bytes are verified,
// the path each part took is counted, a channel error reaches the reader as the very Status the
// HTTP path gives, and unregistered buffers (no registrar, or a refused registration) stay on
// the ObjectStore.
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cache/object_cache.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/caching_channel.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/prefetcher.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/host_region.h"
#include "tests/fakes/temp_dir.h"
#include "tests/unit/fuse/prefetch_reads.h"

namespace reelfs::fuse {
namespace {

using s3::FakeObjectStore;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;

using HostRegion = testing::FakeHostRegion;

// Registers host memory (page-aligned, as the real one demands), or refuses everything.
class FakeRegistrar final : public rdmaio::MemoryRegistrar {
 public:
  Result<std::shared_ptr<rdmaio::RegisteredRegion>> Register(
      const rdmaio::MemorySource& source) override {
    const auto* host = std::get_if<rdmaio::HostMemory>(&source);
    if (host == nullptr) return Status::Unimplemented("host memory only");
    if (refuse) return Status::ResourceExhausted("memlock limit (test)");
    if (host->bytes.empty() || reinterpret_cast<uintptr_t>(host->bytes.data()) % 4096 != 0 ||
        host->bytes.size() % 4096 != 0) {
      return Status::InvalidArgument("misaligned");
    }
    ++registrations;
    return std::shared_ptr<rdmaio::RegisteredRegion>(std::make_shared<HostRegion>(host->bytes));
  }
  std::atomic<bool> refuse{false};
  std::atomic<int> registrations{0};
};

// A DataChannel that "writes the window" by reading the fake store straight into it, and says
// the bytes came by `via`. Errors are the store's, unchanged: RcChannel keeps s3's codes and
// details too (data_channel.h), which is what lets the prefetcher treat both paths alike.
class FakeChannel final : public rdmaio::DataChannel {
 public:
  FakeChannel(std::shared_ptr<FakeObjectStore> store, std::shared_ptr<FakeRegistrar> registrar,
              rdmaio::DataPath via)
      : store_(std::move(store)), registrar_(std::move(registrar)), via_(via) {}

  void Fetch(rdmaio::FetchRequest request, rdmaio::FetchCallback done) override {
    ++fetches;
    const rdmaio::RegisteredWindow& w = request.window;
    if (w.region == nullptr || w.offset + w.length > w.region->length()) {
      done(Status::InvalidArgument("window outside its region"));
      return;
    }
    if (!fail.ok()) {
      done(fail);
      return;
    }
    {
      // RcChannel's WindowFence: a window whose fence failed stays quarantined; every later
      // fetch into it is refused at once, before anything is sent.
      std::lock_guard lock(mutex_);
      const std::byte* at = w.region->host_bytes().data() + w.offset;
      if (quarantine_next > 0) {
        --quarantine_next;
        quarantined.push_back(at);
      }
      if (std::find(quarantined.begin(), quarantined.end(), at) != quarantined.end()) {
        ++refusals;
        // As rdmaio/wire's WindowFence refuses it.
        done(Status(StatusCode::kFailedPrecondition, StatusReason::kWindowQuarantined,
                    "window " + std::to_string(reinterpret_cast<uintptr_t>(at)) +
                        " is quarantined until fenced"));
        return;
      }
    }
    s3::GetObjectRequest get;
    get.bucket = request.bucket;
    get.key = request.key;
    get.range = s3::ByteRange{request.object_offset, w.length};
    get.buffer = w.region->host_bytes().subspan(w.offset, w.length);
    get.if_match = ignore_if_match ? std::string() : request.if_match;
    get.cancel = request.cancel;
    const rdmaio::DataPath via = via_;
    store_->GetObject(get, [done = std::move(done), via](Result<s3::GetObjectResult> r) {
      if (!r.ok()) return done(std::move(r).status());
      done(rdmaio::FetchResult{
          .bytes = r->bytes, .object_size = r->object_size, .etag = r->info.etag, .via = via});
    });
  }
  rdmaio::MemoryRegistrar& registrar() override { return *registrar_; }

  std::atomic<int> fetches{0};
  Status fail;  // set before reads start: every fetch fails with it
  // A server that ignores If-Match: every fetch answers the object as it is now, with its ETag.
  bool ignore_if_match = false;
  // The next this many fetches find their window quarantined (as after a failed fence), and so
  // does every later fetch into one of those windows.
  int quarantine_next = 0;
  std::vector<const std::byte*> quarantined;
  int refusals = 0;
  std::mutex mutex_;

 private:
  const std::shared_ptr<FakeObjectStore> store_;
  const std::shared_ptr<FakeRegistrar> registrar_;
  const rdmaio::DataPath via_;
};

using reelfs::testing::MatchesGenerated;
using reelfs::testing::ReadNow;

// Reads the whole object in 1 MiB reads, one at a time, verifying every byte.
bool ReadAll(Prefetcher& p, const ObjectRef& obj) {
  for (uint64_t offset = 0; offset < obj.size; offset += kMiB) {
    Result<ReadData> r = ReadNow(p, offset, kMiB);
    if (!r.ok() || r->size() != std::min<uint64_t>(kMiB, obj.size - offset) ||
        !MatchesGenerated(obj.key, offset, *r)) {
      return false;
    }
  }
  return true;
}

struct Setup {
  explicit Setup(rdmaio::DataPath via = rdmaio::DataPath::kRdma)
      : store(std::make_shared<FakeObjectStore>()),
        registrar(std::make_shared<FakeRegistrar>()),
        channel(std::make_shared<FakeChannel>(store, registrar, via)),
        budget(std::make_shared<MemoryBudget>(1ull << 30)),
        pool(CreateRegisteredBufferPool(registrar)) {}
  ObjectRef Put(const std::string& key, uint64_t size) {
    return ObjectRef{"b", key, size, store->PutGeneratedObjectForTest("b", key, size)};
  }
  std::unique_ptr<Prefetcher> Create(const ObjectRef& obj) {
    return CreatePrefetcher(store, obj, PrefetchOptions{}, budget, pool, channel);
  }
  std::shared_ptr<FakeObjectStore> store;
  std::shared_ptr<FakeRegistrar> registrar;
  std::shared_ptr<FakeChannel> channel;
  std::shared_ptr<MemoryBudget> budget;
  std::shared_ptr<BufferPool> pool;
};

// --rdma with --cache: the prefetcher reads through a CachingChannel (caching_channel.h), which
// stores only the blocks a fetch holds whole; with the options aligned to the cache's blocks
// a sequential read leaves the object whole in the cache, and a second read takes nothing from
// the channel's server. The default options (a first request of 1 MiB + 128 KiB) leave block 1
// out: that is what the alignment is for.
TEST_CASE("channel with a cache: aligned prefetch options leave the object whole in the cache") {
  for (const bool aligned : {true, false}) {
    CAPTURE(aligned);
    Setup s;
    testing::TempDir dir("reelfs-cache");
    cache::CacheOptions cache_options;
    cache_options.min_free_bytes = 0;
    auto cache = cache::ObjectCache::Open(dir.path, cache_options);
    REQUIRE(cache.ok());
    auto channel = CreateCachingChannel(s.channel, *cache);
    const ObjectRef obj = s.Put("cached", 20 * kMiB + 4321);
    const PrefetchOptions options =
        aligned ? AlignedToCacheBlocks(PrefetchOptions{}, (*cache)->block_size())
                : PrefetchOptions{};
    auto p = CreatePrefetcher(s.store, obj, options, s.budget, s.pool, channel);
    REQUIRE(ReadAll(*p, obj));
    p->Close();
    const cache::CacheKey key{"b", "cached", obj.etag};
    CHECK((*cache)->Complete(key) == aligned);
    if (!aligned) continue;
    const int fetches = s.channel->fetches.load();
    auto again = CreatePrefetcher(s.store, obj, options, s.budget, s.pool, channel);
    REQUIRE(ReadAll(*again, obj));
    CHECK(s.channel->fetches.load() == fetches);  // every part from the cache
  }
}

TEST_CASE("channel: 160 MiB read through registered buffers, verified, every byte over RDMA") {
  Setup s;
  // Not a multiple of a page or of a part: the tail part is short and odd-sized.
  const ObjectRef obj = s.Put("rdma160", 160 * kMiB + 12345);
  auto p = s.Create(obj);
  REQUIRE(ReadAll(*p, obj));
  const PrefetchCounters c = p->counters();
  CHECK(c.requests > 1);
  CHECK(c.channel_requests == c.requests);
  CHECK(s.channel->fetches.load() == static_cast<int>(c.requests));
  CHECK(c.bytes_fetched == obj.size);
  CHECK(c.rdma_bytes == obj.size);
  CHECK(s.store->CallCount(s3::Operation::kGetObject) == c.requests);  // the fake's own reads
  // Registered once per fresh buffer, never per read: recycled parts keep theirs.
  CHECK(s.registrar->registrations.load() == static_cast<int>(s.pool->stats().fresh_allocations));
  CHECK(static_cast<uint64_t>(s.registrar->registrations.load()) < c.requests);
  CHECK(s.pool->stats().registration_failures == 0);
  p.reset();
  s.store->WaitIdle();
  CHECK(s.budget->used() == 0);
}

TEST_CASE("channel: bytes the channel got over HTTP are correct and not counted as RDMA") {
  Setup s(rdmaio::DataPath::kHttp);
  const ObjectRef obj = s.Put("http20", 20 * kMiB);
  auto p = s.Create(obj);
  REQUIRE(ReadAll(*p, obj));
  const PrefetchCounters c = p->counters();
  CHECK(c.channel_requests == c.requests);
  CHECK(c.bytes_fetched == obj.size);
  CHECK(c.rdma_bytes == 0);
}

TEST_CASE("channel: an object smaller than a page, and a random read, through the channel") {
  Setup s;
  const ObjectRef tiny = s.Put("tiny", 100);
  auto p = s.Create(tiny);
  Result<ReadData> r = ReadNow(*p, 0, 4096);
  REQUIRE(r.ok());
  CHECK(r->size() == 100);
  CHECK(MatchesGenerated("tiny", 0, *r));
  CHECK(p->counters().rdma_bytes == 100);

  const ObjectRef big = s.Put("random", 64 * kMiB);
  auto q = s.Create(big);
  r = ReadNow(*q, 50 * kMiB + 7, 64 * kKiB);
  REQUIRE(r.ok());
  CHECK(r->size() == 64 * kKiB);
  CHECK(MatchesGenerated("random", 50 * kMiB + 7, *r));
}

// The Status a reader gets from a prefetcher reading `key`, through the channel or not.
Status FirstReadStatus(Setup& s, const ObjectRef& obj, bool channel) {
  auto p = channel ? s.Create(obj)
                   : CreatePrefetcher(s.store, obj, PrefetchOptions{}, s.budget,
                                      CreateHeapBufferPool(), nullptr);
  Result<ReadData> r = ReadNow(*p, 0, kMiB);
  return r.status();
}

TEST_CASE("channel: errors reach the reader exactly as over HTTP (archived, changed, missing)") {
  Setup s;
  ObjectRef archived = s.Put("archived", 3 * kMiB);
  REQUIRE(s.store->ArchiveObjectForTest("b", "archived").ok());
  ObjectRef changed = s.Put("changed", 3 * kMiB);
  changed.etag = "not-the-etag";
  ObjectRef missing{"b", "missing", 3 * kMiB, "e"};
  for (const ObjectRef& obj : {archived, changed, missing}) {
    CAPTURE(obj.key);
    const Status http = FirstReadStatus(s, obj, false);
    const Status rdma = FirstReadStatus(s, obj, true);
    REQUIRE_FALSE(http.ok());
    CHECK(rdma.code() == http.code());
    CHECK(rdma.reason() == http.reason());
    CHECK(rdma.detail().s3_code == http.detail().s3_code);
    CHECK(rdma.detail().http_status == http.detail().http_status);
  }
  CHECK(s.channel->fetches.load() >= 3);
  CHECK(FirstReadStatus(s, archived, true).detail().s3_code == "InvalidObjectState");
  CHECK(FirstReadStatus(s, archived, true).reason() == StatusReason::kArchived);
}

TEST_CASE(
    "channel: a failed fetch fails the read with the channel's Status; the next read retries") {
  Setup s;
  const ObjectRef obj = s.Put("flaky", 4 * kMiB);
  auto p = s.Create(obj);
  s.channel->fail = Status(StatusCode::kUnavailable, "gateway went away (test)",
                           StatusDetail{.http_status = 503, .s3_code = "SlowDown"});
  Result<ReadData> r = ReadNow(*p, 0, kMiB);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kUnavailable);
  CHECK(r.status().detail().http_status == 503);
  s.channel->fail = Status::Ok();
  r = ReadNow(*p, 0, kMiB);
  REQUIRE(r.ok());
  CHECK(MatchesGenerated("flaky", 0, *r));
}

TEST_CASE("channel: a quarantined window is retired and its part read over HTTP, verified") {
  Setup s;
  const ObjectRef obj = s.Put("quarantine", 40 * kMiB + 5);
  s.channel->quarantine_next = 2;  // the first two parts' buffers are quarantined
  auto p = s.Create(obj);
  REQUIRE(ReadAll(*p, obj));  // no read saw the refusal
  const PrefetchCounters c = p->counters();
  CHECK(s.channel->refusals == 2);
  CHECK(c.quarantined_windows == 2);
  CHECK(c.bytes_fetched == obj.size);
  // Two parts came over plain HTTP (the store), the rest over the channel.
  CHECK(c.rdma_bytes < obj.size);
  CHECK(s.store->CallCount(s3::Operation::kGetObject) ==
        static_cast<uint64_t>(s.channel->fetches.load() - s.channel->refusals + 2));
  p.reset();
  s.store->WaitIdle();
  CHECK(s.budget->used() == 0);  // the retired buffers' reservations were released
  // The retired buffers are never handed out again: allocate far more than the pool holds idle,
  // of every size the stream used, and none of them is a quarantined window.
  REQUIRE(s.channel->quarantined.size() == 2);
  std::vector<std::unique_ptr<Buffer>> held;
  for (int i = 0; i < 64; ++i) {
    for (size_t size : {size_t{8 * kMiB}, size_t{kMiB + 128 * kKiB}}) {
      Result<std::unique_ptr<Buffer>> b = s.pool->Allocate(size);
      REQUIRE(b.ok());
      for (const std::byte* q : s.channel->quarantined) CHECK((*b)->bytes().data() != q);
      held.push_back(std::move(*b));
    }
  }
}

TEST_CASE("channel: a 412 or 403 kFailedPrecondition is the object's, not a refused window") {
  Setup s;
  const ObjectRef obj = s.Put("precondition", 4 * kMiB);
  auto p = s.Create(obj);
  // As a channel reports a 412 (rdmaio/channel/channel_replies.h: the S3 error table's reason).
  s.channel->fail = Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged,
                           "If-Match failed (test)",
                           StatusDetail{.http_status = 412, .s3_code = "PreconditionFailed"});
  Result<ReadData> r = ReadNow(*p, 0, kMiB);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kFailedPrecondition);
  CHECK(r.status().detail().http_status == 412);
  CHECK(p->counters().quarantined_windows == 0);
  CHECK(s.store->CallCount(s3::Operation::kGetObject) == 0);  // no HTTP retry behind its back
}

TEST_CASE("channel: an answer with another ETag or object size is never served (ESTALE, EIO)") {
  // The RDMA path's answers are checked against the handle as the HTTP path's are (issue 17
  // item 5): the bytes are in the window already, but no read may be answered from them.
  for (const rdmaio::DataPath via : {rdmaio::DataPath::kRdma, rdmaio::DataPath::kHttp}) {
    CAPTURE(static_cast<int>(via));
    Setup s(via);
    s.channel->ignore_if_match = true;
    ObjectRef other = s.Put("other-version", 20 * kMiB);
    other.etag = "the-etag-seen-at-open";
    auto p = s.Create(other);
    Result<ReadData> r = ReadNow(*p, 4 * kMiB, 65536);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kFailedPrecondition);
    CHECK(r.status().detail().s3_code == "PreconditionFailed");
    CHECK(r.status().reason() == StatusReason::kObjectChanged);  // ESTALE, not a refused window
    CHECK(r.status().detail().http_status != 0);
    ObjectRef resized = s.Put("resized", 20 * kMiB);
    resized.size = 21 * kMiB;  // the handle opened another size than the answers report
    auto q = s.Create(resized);
    Result<ReadData> t = ReadNow(*q, 4 * kMiB, 65536);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == StatusCode::kDataLoss);  // EIO
    CHECK(s.channel->fetches.load() >= 2);
  }
}

TEST_CASE("channel: unregistered buffers are read over the ObjectStore, the channel unused") {
  SUBCASE("a plain heap pool") {
    Setup s;
    const ObjectRef obj = s.Put("plain", 10 * kMiB);
    auto p = CreatePrefetcher(s.store, obj, PrefetchOptions{}, s.budget, CreateHeapBufferPool(),
                              s.channel);
    REQUIRE(ReadAll(*p, obj));
    CHECK(s.channel->fetches.load() == 0);
    CHECK(p->counters().channel_requests == 0);
    CHECK(p->counters().bytes_fetched == obj.size);
  }
  SUBCASE("a registrar that refuses (memlock limit)") {
    Setup s;
    s.registrar->refuse = true;
    const ObjectRef obj = s.Put("refused", 10 * kMiB);
    auto p = s.Create(obj);
    REQUIRE(ReadAll(*p, obj));
    CHECK(s.channel->fetches.load() == 0);
    CHECK(p->counters().rdma_bytes == 0);
    CHECK(s.pool->stats().registration_failures > 0);
  }
}

TEST_CASE("registered pool: recycled buffers keep their registration, page-aligned windows") {
  auto registrar = std::make_shared<FakeRegistrar>();
  auto pool = CreateRegisteredBufferPool(registrar, 64 * kMiB);
  for (int i = 0; i < 5; ++i) {
    Result<std::unique_ptr<Buffer>> b = pool->Allocate(8 * kMiB);
    REQUIRE(b.ok());
    rdmaio::RegisteredWindow w = (*b)->registered_window();
    REQUIRE(w.region != nullptr);
    CHECK(w.offset == 0);
    CHECK(w.length == 8 * kMiB);
    CHECK(w.region->host_bytes().data() == (*b)->bytes().data());
  }
  CHECK(registrar->registrations.load() == 1);
  // The plain pool hands out no window.
  auto plain = CreateHeapBufferPool();
  Result<std::unique_ptr<Buffer>> b = plain->Allocate(kMiB);
  REQUIRE(b.ok());
  CHECK((*b)->registered_window().region == nullptr);
}

}  // namespace
}  // namespace reelfs::fuse

namespace reelfs::fuse {
namespace {

// FileSystem::ReadTo into a registered window (the side channel on an --rdma mount): one fetch
// straight into the caller's region, the path reported, and the same answers as any read.
TEST_CASE("ReadTo into a registered window: one fetch in place, via reported, errors as reads") {
  auto store = std::make_shared<FakeObjectStore>();
  store->CreateBucketForTest("b");
  std::string data(3 * kMiB + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 29) ^ (i >> 9));
  store->PutObjectForTest("b", "obj", data);
  store->PutObjectForTest("b", "cold", std::string(5000, 'c'), "GLACIER");
  auto registrar = std::make_shared<FakeRegistrar>();
  auto channel = std::make_shared<FakeChannel>(store, registrar, rdmaio::DataPath::kRdma);
  MountOptions options;
  options.bucket = "b";
  testing::FakeClock clock;
  auto fs = CreateFileSystem(store, options, CreateHeapBufferPool(),
                             std::make_shared<MemoryBudget>(64 * kMiB), clock, nullptr,
                             DataPath{.channel = channel});
  auto lookup = [&](const char* name) {
    return s3::Await<Entry>([&](auto cb) { fs->Lookup(kRootInode, name, cb); });
  };
  auto e = lookup("obj");
  REQUIRE(e.ok());
  auto h = s3::Await<OpenedFile>([&](auto cb) { fs->Open(e->attr.ino, O_RDONLY, 0, cb); });
  REQUIRE(h.ok());
  // The caller's memory, registered once (a client's memfd in the real server).
  std::vector<std::byte> storage(8 * kMiB + 4096);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(storage.data()) + 4095) &
                                            ~uintptr_t{4095});
  auto region = registrar->Register(rdmaio::HostMemory{std::span<std::byte>(base, 8 * kMiB)});
  REQUIRE(region.ok());
  auto read_to = [&](InodeId ino, uint64_t fh, uint64_t offset, size_t size, uint64_t at) {
    FileSystem::ReadTarget target;
    target.window = rdmaio::RegisteredWindow{*region, at, size};
    return s3::Await<FileSystem::ReadToResult>(
        [&](auto cb) { fs->ReadTo(ino, fh, offset, size, target, nullptr, cb); });
  };
  const int fetches = channel->fetches.load();
  auto r = read_to(e->attr.ino, h->fh, 1000, 2 * kMiB, 4096);
  REQUIRE(r.ok());
  CHECK(r->bytes == 2 * kMiB);
  CHECK(r->via == rdmaio::DataPath::kRdma);
  CHECK(channel->fetches.load() == fetches + 1);
  CHECK(std::memcmp(base + 4096, data.data() + 1000, 2 * kMiB) == 0);
  // Short at the end of the object.
  auto tail = read_to(e->attr.ino, h->fh, data.size() - 17, kMiB, 0);
  REQUIRE(tail.ok());
  CHECK(tail->bytes == 17);
  CHECK(std::memcmp(base, data.data() + data.size() - 17, 17) == 0);
  // A window shorter than the read is refused before anything is sent.
  FileSystem::ReadTarget small;
  small.window = rdmaio::RegisteredWindow{*region, 0, 100};
  auto refused = s3::Await<FileSystem::ReadToResult>(
      [&](auto cb) { fs->ReadTo(e->attr.ino, h->fh, 0, 200, small, nullptr, cb); });
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  // The object replaced under the handle, the server ignoring If-Match: ESTALE-class.
  channel->ignore_if_match = true;
  store->PutObjectForTest("b", "obj", std::string(data.size(), 'z'));
  auto stale = read_to(e->attr.ino, h->fh, 0, kMiB, 0);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.status().reason() == StatusReason::kObjectChanged);
  channel->ignore_if_match = false;
  fs->Release(h->fh);
  // An archived object: no Restorer here, so the offline answer (EACCES-class), not the bytes.
  auto cold = lookup("cold");
  REQUIRE(cold.ok());
  auto hc = s3::Await<OpenedFile>([&](auto cb) { fs->Open(cold->attr.ino, O_RDONLY, 0, cb); });
  REQUIRE(hc.ok());
  auto offline = read_to(cold->attr.ino, hc->fh, 0, 4096, 0);
  REQUIRE_FALSE(offline.ok());
  CHECK(offline.status().reason() == StatusReason::kArchived);
  fs->Release(hc->fh);
}

}  // namespace
}  // namespace reelfs::fuse

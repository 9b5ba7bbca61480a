#include "fuse/core/caching_channel.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "cache/io_pool.h"
#include "common/units.h"
#include "s3/etag.h"

namespace reelfs::fuse {
namespace {

bool Cancelled(const rdmaio::FetchRequest& req) {
  return req.cancel != nullptr && req.cancel->cancelled();
}

// What the callbacks hold: they may outlive the decorator (a fetch completing at unmount). The
// inner channel is weak, as CachingStore holds its inner store: its owner (the mount's RDMA
// path) tears it down in its own order, never a pool thread.
struct Shared {
  std::weak_ptr<rdmaio::DataChannel> inner;
  std::shared_ptr<cache::ObjectCache> cache;
  cache::IoPool pool;

  Shared(std::weak_ptr<rdmaio::DataChannel> i, std::shared_ptr<cache::ObjectCache> c, size_t n)
      : inner(std::move(i)), cache(std::move(c)), pool(n) {}
};

// The window's bytes as this process sees them; empty for device memory.
std::span<std::byte> HostWindow(const rdmaio::RegisteredWindow& w) {
  if (w.region == nullptr || w.length == 0) return {};
  std::span<std::byte> all = w.region->host_bytes();
  if (all.size() < w.offset + w.length) return {};
  return all.subspan(w.offset, w.length);
}

// The whole blocks of what was fetched (the cache stores block-aligned runs; the partial blocks at
// either end of an unaligned fetch are left to another read).
void StoreFetched(cache::ObjectCache& cache, const cache::CacheKey& key,
                  std::span<const std::byte> bytes, uint64_t offset, uint64_t object_size) {
  const uint64_t bs = cache.block_size();
  const uint64_t skip = AlignUp(offset, bs) - offset;
  if (skip >= bytes.size()) return;
  cache.Store(key, object_size, offset + skip, bytes.subspan(skip)).IgnoreError();  // it warns
}

// A fetch from the inner channel; on success into memory only the daemon writes, its whole
// blocks are stored (on a pool thread) before `done` runs.
void Miss(const std::shared_ptr<Shared>& shared, rdmaio::FetchRequest req, cache::CacheKey key,
          rdmaio::FetchCallback done) {
  std::shared_ptr<rdmaio::DataChannel> inner = shared->inner.lock();
  if (inner == nullptr) return done(Status::Cancelled("the data channel is shut down"));
  if (req.client_writable) {
    // Another process can change these bytes before they would be hashed: never stored.
    inner->Fetch(std::move(req), std::move(done));
    return;
  }
  const uint64_t offset = req.object_offset;
  // Held until the store is done with its bytes, whoever else lets go of the region meanwhile.
  std::shared_ptr<rdmaio::RegisteredRegion> region = req.window.region;
  const std::span<std::byte> host = HostWindow(req.window);
  inner->Fetch(
      std::move(req), [shared, key = std::move(key), region = std::move(region), host, offset,
                       done = std::move(done)](Result<rdmaio::FetchResult> r) mutable {
        // Only the version pinned (a server that ignored If-Match sent another object's bytes), and
        // never an empty answer.
        if (!r.ok() || r->bytes == 0 || r->object_size == 0 || s3::BareEtag(r->etag) != key.etag) {
          done(std::move(r));
          return;
        }
        Shared& s = *shared;
        s.pool.Post([shared = std::move(shared), key = std::move(key), region = std::move(region),
                     host, offset, r = std::move(r), done = std::move(done)]() mutable {
          StoreFetched(*shared->cache, key, host.first(std::min<uint64_t>(r->bytes, host.size())),
                       offset, r->object_size);
          region.reset();
          done(std::move(r));
        });
      });
}

// On a pool thread: the cache's bytes into the window, or the server's when the cache can no
// longer serve them (evicted meanwhile, or a block that fails its hash: the cache dropped it).
void ServeHit(const std::shared_ptr<Shared>& shared, rdmaio::FetchRequest req, cache::CacheKey key,
              uint64_t length, uint64_t size, rdmaio::FetchCallback done) {
  if (Cancelled(req)) return done(Status::Cancelled("fetch cancelled"));
  const std::span<std::byte> host = HostWindow(req.window);
  if (Status s = shared->cache->Read(key, req.object_offset, host.first(length)); !s.ok()) {
    Miss(shared, std::move(req), std::move(key), std::move(done));
    return;
  }
  done(rdmaio::FetchResult{
      .bytes = length, .object_size = size, .etag = key.etag, .via = rdmaio::DataPath::kCache});
}

class CachingChannel final : public rdmaio::DataChannel {
 public:
  CachingChannel(std::shared_ptr<rdmaio::DataChannel> inner,
                 std::shared_ptr<cache::ObjectCache> cache, size_t io_threads)
      : inner_(inner), shared_(std::make_shared<Shared>(inner, std::move(cache), io_threads)) {}

  void Fetch(rdmaio::FetchRequest req, rdmaio::FetchCallback done) override {
    const std::span<std::byte> host = HostWindow(req.window);
    if (host.empty() || req.if_match.empty()) {
      inner_->Fetch(std::move(req), std::move(done));
      return;
    }
    cache::CacheKey key{req.bucket, req.key, std::string(s3::BareEtag(req.if_match))};
    cache::ObjectCache& cache = *shared_->cache;
    if (std::optional<uint64_t> size = cache.ObjectSize(key); size && req.object_offset < *size) {
      const uint64_t length = std::min<uint64_t>(host.size(), *size - req.object_offset);
      if (cache.Covers(key, req.object_offset, length)) {
        // The request keeps the window's region alive until `done`.
        shared_->pool.Post([shared = shared_, req = std::move(req), key = std::move(key), length,
                            size = *size, done = std::move(done)]() mutable {
          ServeHit(shared, std::move(req), std::move(key), length, size, std::move(done));
        });
        return;
      }
    }
    Miss(shared_, std::move(req), std::move(key), std::move(done));
  }

  void Put(rdmaio::PutRequest req, rdmaio::PutCallback done) override {
    inner_->Put(std::move(req), std::move(done));
  }

  rdmaio::MemoryRegistrar& registrar() override { return inner_->registrar(); }

 private:
  const std::shared_ptr<rdmaio::DataChannel> inner_;
  const std::shared_ptr<Shared> shared_;
};

}  // namespace

std::shared_ptr<rdmaio::DataChannel> CreateCachingChannel(
    std::shared_ptr<rdmaio::DataChannel> inner, std::shared_ptr<cache::ObjectCache> cache,
    size_t io_threads) {
  return std::make_shared<CachingChannel>(std::move(inner), std::move(cache), io_threads);
}

PrefetchOptions AlignedToCacheBlocks(PrefetchOptions options, uint64_t block_size) {
  if (block_size == 0) return options;
  options.initial_request = AlignUp(options.initial_request, block_size);
  options.part_size = AlignUp(options.part_size, block_size);
  return options;
}

}  // namespace reelfs::fuse

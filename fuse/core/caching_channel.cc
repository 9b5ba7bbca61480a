#include "fuse/core/caching_channel.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "cache/io_pool.h"
#include "s3/etag.h"

namespace reelfs::fuse {
namespace {

bool Cancelled(const rdmaio::FetchRequest& req) {
  return req.cancel != nullptr && req.cancel->cancelled();
}

class CachingChannel final : public rdmaio::DataChannel,
                             public std::enable_shared_from_this<CachingChannel> {
 public:
  CachingChannel(std::shared_ptr<rdmaio::DataChannel> inner,
                 std::shared_ptr<cache::ObjectCache> cache, size_t io_threads)
      : inner_(std::move(inner)), cache_(std::move(cache)), pool_(io_threads) {}

  void Fetch(rdmaio::FetchRequest req, rdmaio::FetchCallback done) override {
    const std::span<std::byte> host = HostWindow(req.window);
    if (host.empty() || req.if_match.empty()) {
      inner_->Fetch(std::move(req), std::move(done));
      return;
    }
    cache::CacheKey key{req.bucket, req.key, std::string(s3::BareEtag(req.if_match))};
    if (std::optional<uint64_t> size = cache_->ObjectSize(key); size && req.object_offset < *size) {
      const uint64_t length = std::min<uint64_t>(host.size(), *size - req.object_offset);
      if (cache_->Covers(key, req.object_offset, length)) {
        pool_.Post([self = shared_from_this(), req = std::move(req), key = std::move(key), host,
                    length, size = *size, done = std::move(done)]() mutable {
          self->ServeHit(std::move(req), std::move(key), host, length, size, std::move(done));
        });
        return;
      }
    }
    Miss(std::move(req), std::move(key), host, std::move(done));
  }

  void Put(rdmaio::PutRequest req, rdmaio::PutCallback done) override {
    inner_->Put(std::move(req), std::move(done));
  }

  rdmaio::MemoryRegistrar& registrar() override { return inner_->registrar(); }

 private:
  // The window's bytes as this process sees them; empty for device memory.
  static std::span<std::byte> HostWindow(const rdmaio::RegisteredWindow& w) {
    if (w.region == nullptr || w.length == 0) return {};
    std::span<std::byte> all = w.region->host_bytes();
    if (all.size() < w.offset + w.length) return {};
    return all.subspan(w.offset, w.length);
  }

  // On a pool thread: the cache's bytes into the window, or the server's when the cache can no
  // longer serve them (evicted meanwhile, or a block that fails its hash: the cache dropped it).
  void ServeHit(rdmaio::FetchRequest req, cache::CacheKey key, std::span<std::byte> host,
                uint64_t length, uint64_t size, rdmaio::FetchCallback done) {
    if (Cancelled(req)) return done(Status::Cancelled("fetch cancelled"));
    if (Status s = cache_->Read(key, req.object_offset, host.first(length)); !s.ok()) {
      Miss(std::move(req), std::move(key), host, std::move(done));
      return;
    }
    done(rdmaio::FetchResult{
        .bytes = length, .object_size = size, .etag = key.etag, .via = rdmaio::DataPath::kCache});
  }

  void Miss(rdmaio::FetchRequest req, cache::CacheKey key, std::span<std::byte> host,
            rdmaio::FetchCallback done) {
    const uint64_t offset = req.object_offset;
    inner_->Fetch(std::move(req), [self = shared_from_this(), key = std::move(key), host, offset,
                                   done = std::move(done)](Result<rdmaio::FetchResult> r) mutable {
      // Only the version pinned (a server that ignored If-Match sent another object's bytes),
      // and never an empty answer.
      if (!r.ok() || r->bytes == 0 || r->object_size == 0 || s3::BareEtag(r->etag) != key.etag) {
        done(std::move(r));
        return;
      }
      self->pool_.Post([self, key = std::move(key), host, offset, r = std::move(r),
                        done = std::move(done)]() mutable {
        self->StoreFetched(key, host.first(std::min<uint64_t>(r->bytes, host.size())), offset,
                           r->object_size);
        done(std::move(r));
      });
    });
  }

  // The whole blocks of what was fetched (the cache stores block-aligned runs; the partial blocks
  // at either end of an unaligned fetch are left to another read).
  void StoreFetched(const cache::CacheKey& key, std::span<const std::byte> bytes, uint64_t offset,
                    uint64_t object_size) {
    const uint64_t bs = cache_->block_size();
    const uint64_t skip = (bs - offset % bs) % bs;
    if (skip >= bytes.size()) return;
    cache_->Store(key, object_size, offset + skip, bytes.subspan(skip)).IgnoreError();  // warns
  }

  const std::shared_ptr<rdmaio::DataChannel> inner_;
  const std::shared_ptr<cache::ObjectCache> cache_;
  cache::IoPool pool_;  // last: its destructor runs what is queued while the rest still lives
};

}  // namespace

std::shared_ptr<rdmaio::DataChannel> CreateCachingChannel(
    std::shared_ptr<rdmaio::DataChannel> inner, std::shared_ptr<cache::ObjectCache> cache,
    size_t io_threads) {
  return std::make_shared<CachingChannel>(std::move(inner), std::move(cache), io_threads);
}

}  // namespace reelfs::fuse

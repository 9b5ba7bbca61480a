// CachingStore (caching_store.h).

#include "cache/caching_store.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "cache/io_pool.h"
#include "common/log.h"
#include "common/units.h"
#include "fmt/format.h"
#include "s3/etag.h"
#include "s3/forwarding_store.h"

namespace reelfs::cache {
namespace {

// Pieces handed to a sink from the cache: the S3 client hands over its body in pieces too.
constexpr uint64_t kSinkPiece = 1ull << 20;
// A GET into a sink (the side channel's READs) keeps a copy of its body to store when the copies
// of all such GETs in flight stay within this; beyond it they pass through unstored (a client
// with thousands of READs in flight must not hold their bodies twice).
constexpr uint64_t kSinkTeeBudget = 64ull << 20;

// What the callbacks hold: they may outlive the CachingStore (a GET completing at shutdown). The
// inner store is weak: it may be destroyed from its own callback thread, never by ours.
struct Shared {
  std::weak_ptr<s3::ObjectStore> inner;
  std::shared_ptr<ObjectCache> cache;
  // Bytes of sink GETs held to be stored (kSinkTeeBudget at most, all GETs together).
  std::atomic<uint64_t> tee_bytes{0};
  IoPool pool;

  Shared(std::weak_ptr<s3::ObjectStore> i, std::shared_ptr<ObjectCache> c, size_t threads)
      : inner(std::move(i)), cache(std::move(c)), pool(threads) {}
};

bool Cancelled(const s3::GetObjectRequest& req) {
  return req.cancel != nullptr && req.cancel->cancelled();
}

void StoreAnswer(Shared& shared, const CacheKey& key, const s3::GetObjectResult& r, uint64_t offset,
                 std::span<const std::byte> bytes) {
  // Only the version pinned: a server that ignored If-Match sent another object's bytes.
  if (r.object_size == 0 || s3::BareEtag(r.info.etag) != key.etag) return;
  shared.cache->Store(key, r.object_size, offset, bytes).IgnoreError();  // the cache warns
}

void Fetch(const std::shared_ptr<Shared>& shared, const s3::GetObjectRequest& req, CacheKey key,
           s3::Callback<s3::GetObjectResult> done);

// Answers `req` from the cache (on an IoPool thread); falls back to the server if the cache can
// no longer serve it.
void ServeHit(const std::shared_ptr<Shared>& shared, const s3::GetObjectRequest& req, CacheKey key,
              uint64_t length, uint64_t object_size, s3::Callback<s3::GetObjectResult> done) {
  if (Cancelled(req)) return done(Status::Cancelled("GetObject cancelled"));
  const uint64_t offset = req.range->offset;
  Status s;
  if (!req.buffer.empty()) {
    if (req.buffer.size() < length) return Fetch(shared, req, std::move(key), std::move(done));
    s = shared->cache->Read(key, offset, req.buffer.first(length));
  } else {
    std::vector<std::byte> piece;
    for (uint64_t at = 0; at < length && s.ok();) {
      piece.resize(std::min(kSinkPiece, length - at));
      s = shared->cache->Read(key, offset + at, piece);
      if (s.ok()) {
        Status sunk = req.sink(piece);
        if (!sunk.ok()) return done(std::move(sunk));
      }
      at += piece.size();
    }
    // A sink that already took bytes cannot be restarted at the server.
    if (!s.ok()) {
      return done(Status::DataLoss(
          fmt::format("the cached copy of '{}' failed mid-read: {}", key.key, s.message())));
    }
  }
  if (!s.ok()) return Fetch(shared, req, std::move(key), std::move(done));
  s3::GetObjectResult r;
  r.http_status = 206;
  r.bytes = length;
  r.object_size = object_size;
  r.info.key = key.key;
  r.info.etag = key.etag;
  r.info.size = object_size;
  done(std::move(r));
}

// A GET into the caller's sink, unchanged, with a copy of the body kept on the way (within
// kSinkTeeBudget) whose whole blocks are stored before the caller's callback runs.
void FetchToSink(const std::shared_ptr<Shared>& shared, const s3::GetObjectRequest& req,
                 CacheKey key, s3::Callback<s3::GetObjectResult> done) {
  std::shared_ptr<s3::ObjectStore> inner = shared->inner.lock();
  if (inner == nullptr) return done(Status::Cancelled("the object store is shut down"));
  const uint64_t length = req.range->length;
  const uint64_t bs = shared->cache->block_size();
  // Worth a copy only when a block begins in the range (a whole block, or the object's last
  // one, may then be in it); the others cannot store anything.
  const bool worth = AlignUp(req.range->offset, bs) < req.range->offset + length;
  if (!worth || shared->tee_bytes.fetch_add(length) + length > kSinkTeeBudget) {
    if (worth) shared->tee_bytes.fetch_sub(length);
    inner->GetObject(req, std::move(done));
    return;
  }
  auto copy = std::make_shared<std::vector<std::byte>>();
  s3::GetObjectRequest tee = req;
  tee.sink = [sink = req.sink, copy, length](std::span<const std::byte> chunk) -> Status {
    Status s = sink(chunk);
    if (s.ok() && copy->size() + chunk.size() <= length) {
      copy->insert(copy->end(), chunk.begin(), chunk.end());
    }
    return s;
  };
  const uint64_t offset = req.range->offset;
  const uint64_t skip = AlignUp(offset, bs) - offset;  // the first whole block's
  inner->GetObject(tee, [shared, key = std::move(key), offset, skip, length, copy,
                         done = std::move(done)](Result<s3::GetObjectResult> r) mutable {
    if (!r.ok()) {
      shared->tee_bytes.fetch_sub(length);
      return done(std::move(r));
    }
    shared->pool.Post([shared, key = std::move(key), offset, skip, length, copy, r = std::move(r),
                       done = std::move(done)]() mutable {
      if (copy->size() == r->bytes && skip < copy->size()) {
        StoreAnswer(*shared, key, *r, offset + skip,
                    std::span<const std::byte>(*copy).subspan(skip));
      }
      copy.reset();
      shared->tee_bytes.fetch_sub(length);
      done(std::move(r));
    });
  });
}

void Fetch(const std::shared_ptr<Shared>& shared, const s3::GetObjectRequest& req, CacheKey key,
           s3::Callback<s3::GetObjectResult> done) {
  std::shared_ptr<s3::ObjectStore> inner = shared->inner.lock();
  if (inner == nullptr) return done(Status::Cancelled("the object store is shut down"));
  const uint64_t bs = shared->cache->block_size();
  const uint64_t offset = req.range->offset;
  const uint64_t length = req.range->length;
  if (req.buffer.empty()) {
    FetchToSink(shared, req, std::move(key), std::move(done));
    return;
  }
  const uint64_t begin = AlignDown(offset, bs);
  const uint64_t end = AlignUp(offset + length, bs);
  if (begin == offset && end == offset + length) {
    // Aligned already: straight into the caller's buffer, stored before the caller gets it back.
    inner->GetObject(req, [shared, key = std::move(key), offset, req,
                           done = std::move(done)](Result<s3::GetObjectResult> r) mutable {
      if (!r.ok()) return done(std::move(r));
      shared->pool.Post([shared, key = std::move(key), offset, req, r = std::move(r),
                         done = std::move(done)]() mutable {
        StoreAnswer(*shared, key, *r, offset,
                    req.buffer.first(std::min(r->bytes, req.buffer.size())));
        done(std::move(r));
      });
    });
    return;
  }
  // Widened to whole blocks, through a scratch buffer: the blocks at both ends are stored too,
  // so a stream whose first read was unaligned caches every block it passes.
  auto scratch = std::make_shared<std::vector<std::byte>>(end - begin);
  s3::GetObjectRequest wide = req;
  wide.range = s3::ByteRange{begin, end - begin};
  wide.buffer = std::span<std::byte>(*scratch);
  wide.sink = nullptr;
  inner->GetObject(wide, [shared, key = std::move(key), begin, offset, length, req, scratch,
                          done = std::move(done)](Result<s3::GetObjectResult> r) mutable {
    if (!r.ok()) return done(std::move(r));
    shared->pool.Post([shared, key = std::move(key), begin, offset, length, req, scratch,
                       r = std::move(r), done = std::move(done)]() mutable {
      const uint64_t delivered = std::min<uint64_t>(r->bytes, scratch->size());
      const uint64_t skip = offset - begin;
      const uint64_t mine = delivered > skip ? std::min(length, delivered - skip) : 0;
      if (mine > req.buffer.size()) {
        return done(Status::OutOfRange("GetObject body longer than the buffer"));
      }
      std::copy_n(scratch->begin() + static_cast<ptrdiff_t>(skip), mine, req.buffer.begin());
      s3::GetObjectResult answer = *r;
      answer.bytes = mine;
      StoreAnswer(*shared, key, *r, begin, std::span<const std::byte>(*scratch).first(delivered));
      done(std::move(answer));
    });
  });
}

class CachingStore final : public s3::ForwardingStore {
 public:
  CachingStore(std::shared_ptr<s3::ObjectStore> inner, std::shared_ptr<ObjectCache> cache,
               size_t io_threads)
      : ForwardingStore(inner),
        shared_(std::make_shared<Shared>(inner, std::move(cache), io_threads)) {}

  void GetObject(const s3::GetObjectRequest& req, s3::Callback<s3::GetObjectResult> done) override {
    if (!req.range || req.range->length == 0 || req.if_match.empty() ||
        !req.extra_headers.empty()) {
      inner_->GetObject(req, std::move(done));
      return;
    }
    CacheKey key{req.bucket, req.key, std::string(s3::BareEtag(req.if_match))};
    const uint64_t offset = req.range->offset;
    if (std::optional<uint64_t> size = shared_->cache->ObjectSize(key); size && offset < *size) {
      const uint64_t length = std::min(req.range->length, *size - offset);
      if (shared_->cache->Covers(key, offset, length)) {
        shared_->pool.Post([shared = shared_, req, key = std::move(key), length, size = *size,
                            done = std::move(done)]() mutable {
          ServeHit(shared, req, std::move(key), length, size, std::move(done));
        });
        return;
      }
    }
    Fetch(shared_, req, std::move(key), std::move(done));
  }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

std::shared_ptr<s3::ObjectStore> CreateCachingStore(std::shared_ptr<s3::ObjectStore> inner,
                                                    std::shared_ptr<ObjectCache> cache,
                                                    size_t io_threads) {
  return std::make_shared<CachingStore>(std::move(inner), std::move(cache), io_threads);
}

}  // namespace reelfs::cache

// PartSender (part_sender.h): the store's sender and the data channel's.
#include "fuse/core/part_sender.h"

#include <atomic>
#include <utility>

#include "common/log.h"

namespace reelfs::fuse {
namespace {

// The counters, shared with the callbacks in flight (they may answer after the sender is gone).
struct AtomicCounters {
  std::atomic<uint64_t> rdma_put_parts{0};
  std::atomic<uint64_t> rdma_put_bytes{0};
  std::atomic<uint64_t> http_put_parts{0};
  std::atomic<uint64_t> http_put_bytes{0};
  std::atomic<uint64_t> put_fallbacks{0};
  std::atomic<uint64_t> put_failures{0};

  void Count(rdmaio::DataPath via, uint64_t bytes) {
    if (via == rdmaio::DataPath::kRdma) {
      rdma_put_parts.fetch_add(1, std::memory_order_relaxed);
      rdma_put_bytes.fetch_add(bytes, std::memory_order_relaxed);
    } else {
      http_put_parts.fetch_add(1, std::memory_order_relaxed);
      http_put_bytes.fetch_add(bytes, std::memory_order_relaxed);
    }
  }

  PutCounters Snapshot() const {
    return {.rdma_put_parts = rdma_put_parts.load(std::memory_order_relaxed),
            .rdma_put_bytes = rdma_put_bytes.load(std::memory_order_relaxed),
            .http_put_parts = http_put_parts.load(std::memory_order_relaxed),
            .http_put_bytes = http_put_bytes.load(std::memory_order_relaxed),
            .put_fallbacks = put_fallbacks.load(std::memory_order_relaxed),
            .put_failures = put_failures.load(std::memory_order_relaxed)};
  }
};

// The payload as a PutObject or UploadPart through the store; counted over HTTP.
void SendOverStore(s3::ObjectStore& store, const std::shared_ptr<AtomicCounters>& counters,
                   const PartPayload& payload, bool fallback, bool retire,
                   s3::Callback<PartSent> done) {
  const uint64_t bytes = payload.body.size();
  auto answer = [counters, bytes, fallback, retire,
                 done = std::move(done)](Result<std::string> etag) {
    if (!etag.ok()) {
      counters->put_failures.fetch_add(1, std::memory_order_relaxed);
      return done(std::move(etag).status());
    }
    counters->Count(rdmaio::DataPath::kHttp, bytes);
    if (fallback) counters->put_fallbacks.fetch_add(1, std::memory_order_relaxed);
    done(PartSent{
        .etag = std::move(etag).value(), .via = rdmaio::DataPath::kHttp, .retire_buffer = retire});
  };
  if (payload.part_number == 0) {
    s3::PutObjectRequest req;
    req.bucket = payload.bucket;
    req.key = payload.key;
    req.body = payload.body;
    req.content_type = payload.content_type;
    store.PutObject(req, std::move(answer));
  } else {
    s3::UploadPartRequest req;
    req.bucket = payload.bucket;
    req.key = payload.key;
    req.upload_id = payload.upload_id;
    req.part_number = payload.part_number;
    req.body = payload.body;
    store.UploadPart(req, std::move(answer));
  }
}

class StorePartSender final : public PartSender {
 public:
  explicit StorePartSender(std::shared_ptr<s3::ObjectStore> store) : store_(std::move(store)) {}

  void Send(const PartPayload& payload, s3::Callback<PartSent> done) override {
    SendOverStore(*store_, counters_, payload, /*fallback=*/false, /*retire=*/false,
                  std::move(done));
  }
  PutCounters counters() const override { return counters_->Snapshot(); }

 private:
  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<AtomicCounters> counters_ = std::make_shared<AtomicCounters>();
};

// The window is one the channel will not use at all (as the prefetcher's IsWindowRefusal).
bool IsWindowRefusal(const Status& status) {
  return status.reason() == StatusReason::kWindowQuarantined ||
         status.reason() == StatusReason::kWindowBusy;
}

class ChannelPartSender final : public PartSender {
 public:
  ChannelPartSender(std::shared_ptr<rdmaio::DataChannel> channel,
                    std::shared_ptr<s3::ObjectStore> store)
      : channel_(std::move(channel)), store_(std::move(store)) {}

  void Send(const PartPayload& payload, s3::Callback<PartSent> done) override {
    if (payload.window.region == nullptr || payload.body.empty()) {
      // Unregistered memory (the registrar refused it: memlock), or an empty file, which RDMA
      // cannot carry (a PUT moves 1 byte .. 5 GiB): the store, as reads of such buffers do.
      SendOverStore(*store_, counters_, payload, /*fallback=*/false, /*retire=*/false,
                    std::move(done));
      return;
    }
    rdmaio::PutRequest req{.bucket = payload.bucket,
                           .key = payload.key,
                           .part_number = payload.part_number,
                           .upload_id = payload.upload_id,
                           .window = payload.window,
                           .content_type = payload.content_type,
                           .cancel = nullptr};
    req.window.length = payload.body.size();
    // The callback holds the store and the counters, not the sender: the mount may be tearing
    // down while the last parts answer. The payload is copied: the caller keeps its bytes alive
    // until `done`, but not the request object.
    channel_->Put(std::move(req), [store = store_, counters = counters_, payload,
                                   done = std::move(done)](Result<rdmaio::PutResult> r) mutable {
      if (r.ok()) {
        counters->Count(r->via, payload.body.size());
        // The channel counts its own fallbacks (a PUT that tried RDMA first and went over HTTP);
        // it reports only the path, and a path of HTTP means the channel declined or fell back.
        if (r->via == rdmaio::DataPath::kHttp) {
          counters->put_fallbacks.fetch_add(1, std::memory_order_relaxed);
        }
        return done(PartSent{.etag = std::move(r->etag), .via = r->via});
      }
      const Status& status = r.status();
      const bool refused = IsWindowRefusal(status);
      if (refused || status.code() == StatusCode::kUnimplemented) {
        // Nothing was sent (the channel refuses before any request): the same bytes over the
        // store. A refused window is one whose fence failed earlier: the buffer is retired.
        if (refused) {
          REELFS_LOG_WARN("fuse",
                          "{} part {}: the data channel refused its buffer ({}); the part goes "
                          "over HTTP and the buffer is retired",
                          payload.key, payload.part_number, status.ToString());
        }
        SendOverStore(*store, counters, payload, /*fallback=*/true, refused, std::move(done));
        return;
      }
      counters->put_failures.fetch_add(1, std::memory_order_relaxed);
      done(std::move(r).status());
    });
  }
  PutCounters counters() const override { return counters_->Snapshot(); }

 private:
  const std::shared_ptr<rdmaio::DataChannel> channel_;
  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<AtomicCounters> counters_ = std::make_shared<AtomicCounters>();
};

}  // namespace

std::shared_ptr<PartSender> CreateStorePartSender(std::shared_ptr<s3::ObjectStore> store) {
  return std::make_shared<StorePartSender>(std::move(store));
}

std::shared_ptr<PartSender> CreateChannelPartSender(std::shared_ptr<rdmaio::DataChannel> channel,
                                                    std::shared_ptr<s3::ObjectStore> store) {
  return std::make_shared<ChannelPartSender>(std::move(channel), std::move(store));
}

}  // namespace reelfs::fuse

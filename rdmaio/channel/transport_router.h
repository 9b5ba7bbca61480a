// TransportRouter: a DataChannel that sends each fetch through one of two channels over the same
// registered memory: `mount --rdma-transport=auto` (docs/protocols/rdma-dc.md "Choosing").
//
// auto starts with RC (hipobj-rc-v2: works on every RDMA NIC, Soft-RoCE included) and switches to
// cuObject DC once the endpoint has declined hipobj-rc-v2 (RcChannel's policy says RDMA GET is
// off for it: a cuObject server such as vgwrdma, NooBaa or AIStor answers the PREPARE POST as a
// plain S3 request) and the device can do DC. The decision is re-read on every fetch, so the
// fetch that gets the decline still completes (over HTTP, inside RcChannel) and the next one goes
// over DC. While DC serves the endpoint, RC is not re-probed: DcChannel has its own policy, with
// its own fallback to HTTP and re-probing.
//
// Uploads (Put) always go to `first`: cuObject DC has no PUT here, and RcChannel's own write
// policy already sends a PUT over HTTP to an endpoint that declined hipobj-rc-v2 uploads.
//
// Both channels must fetch into the same regions: `second`'s Locate must accept regions from
// `first`'s registrar (for verbs: one ProtectionDomain under both), since callers register
// through registrar(), which is `first`'s.
//
// Thread-safety: Fetch, Put and registrar may be called from any thread; `use_second` must be too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "rdmaio/data_channel.h"

namespace reelfs::rdmaio::channel {

class TransportRouter final : public DataChannel {
 public:
  // `second` may be null (then every fetch goes to `first`). `description` names the switch in
  // the log line written once when it first happens ("endpoint X declined hipobj-rc-v2").
  TransportRouter(std::shared_ptr<DataChannel> first, std::shared_ptr<DataChannel> second,
                  std::function<bool()> use_second, std::string description);

  void Fetch(FetchRequest request, FetchCallback done) override;
  void Put(PutRequest request, PutCallback done) override {
    first_->Put(std::move(request), std::move(done));
  }
  MemoryRegistrar& registrar() override { return first_->registrar(); }

  // Fetches sent to each channel so far.
  uint64_t first_fetches() const { return first_fetches_.load(std::memory_order_relaxed); }
  uint64_t second_fetches() const { return second_fetches_.load(std::memory_order_relaxed); }

 private:
  const std::shared_ptr<DataChannel> first_;
  const std::shared_ptr<DataChannel> second_;
  const std::function<bool()> use_second_;
  const std::string description_;
  std::atomic<uint64_t> first_fetches_{0};
  std::atomic<uint64_t> second_fetches_{0};
  std::atomic<bool> switched_{false};
};

}  // namespace reelfs::rdmaio::channel

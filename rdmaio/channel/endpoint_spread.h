// EndpointSpread: one DataChannel over one channel per gateway endpoint (several front ends of one
// archive; docs/s3-client.md "Several endpoints"), so RDMA sessions are spread like HTTP reads.
//
// Each fetch and upload goes to the channel whose endpoint is up with the fewest operations in
// flight (ties: the next in turn), the rule the HTTP path follows; when no endpoint is up, to the
// one with the fewest in flight (its channel then fails or falls back as it would alone). Every
// channel keeps its own sessions, endpoint policy and HTTP fallback, so a decline, a fence or an
// RDMA failure stays with its endpoint. `up(i)` is the HTTP client's view of endpoint i (a data
// GET that fails marks it down there, and an active probe brings it back).
//
// All channels must accept regions from the first one's registrar (one protection domain and one
// registrar under all of them; cli/rdma_data_path.cc builds them so).
//
// Thread-safety: Fetch, Put and registrar may be called from any thread; `up` must be too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rdmaio/data_channel.h"

namespace reelfs::rdmaio::channel {

class EndpointSpread final : public DataChannel {
 public:
  // `channels`: at least one, index i serving endpoint i.
  EndpointSpread(std::vector<std::shared_ptr<DataChannel>> channels,
                 std::function<bool(size_t)> up);

  void Fetch(FetchRequest request, FetchCallback done) override;
  void Put(PutRequest request, PutCallback done) override;
  MemoryRegistrar& registrar() override { return channels_.front()->registrar(); }

  // Operations (fetches and uploads) sent to each channel so far.
  std::vector<uint64_t> operations() const;

 private:
  struct Slot {
    std::atomic<int64_t> in_flight{0};
    std::atomic<uint64_t> operations{0};
  };
  // The channel for a new operation, counted in flight until its callback runs.
  size_t Pick();

  const std::vector<std::shared_ptr<DataChannel>> channels_;
  const std::function<bool(size_t)> up_;
  // Shared with the callbacks in flight: a channel may complete after this object is gone.
  std::shared_ptr<Slot[]> slots_;
  std::atomic<size_t> next_{0};
};

}  // namespace reelfs::rdmaio::channel

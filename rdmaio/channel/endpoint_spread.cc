#include "rdmaio/channel/endpoint_spread.h"

#include <utility>

namespace reelfs::rdmaio::channel {

EndpointSpread::EndpointSpread(std::vector<std::shared_ptr<DataChannel>> channels,
                               std::function<bool(size_t)> up)
    : channels_(std::move(channels)), up_(std::move(up)), slots_(new Slot[channels_.size()]) {}

size_t EndpointSpread::Pick() {
  const size_t n = channels_.size();
  const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
  size_t best = n;
  bool best_up = false;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    const bool up = !up_ || up_(i);
    const int64_t load = slots_[i].in_flight.load(std::memory_order_relaxed);
    // An endpoint that is up beats one that is down; then the fewest in flight.
    if (best == n || (up && !best_up) ||
        (up == best_up && load < slots_[best].in_flight.load(std::memory_order_relaxed))) {
      best = i;
      best_up = up;
    }
  }
  slots_[best].in_flight.fetch_add(1, std::memory_order_relaxed);
  slots_[best].operations.fetch_add(1, std::memory_order_relaxed);
  return best;
}

void EndpointSpread::Fetch(FetchRequest request, FetchCallback done) {
  const size_t i = Pick();
  channels_[i]->Fetch(std::move(request),
                      [slots = slots_, i, done = std::move(done)](Result<FetchResult> result) {
                        slots[i].in_flight.fetch_sub(1, std::memory_order_relaxed);
                        done(std::move(result));
                      });
}

void EndpointSpread::Put(PutRequest request, PutCallback done) {
  const size_t i = Pick();
  channels_[i]->Put(std::move(request),
                    [slots = slots_, i, done = std::move(done)](Result<PutResult> result) {
                      slots[i].in_flight.fetch_sub(1, std::memory_order_relaxed);
                      done(std::move(result));
                    });
}

std::vector<uint64_t> EndpointSpread::operations() const {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < channels_.size(); ++i) {
    out.push_back(slots_[i].operations.load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace reelfs::rdmaio::channel

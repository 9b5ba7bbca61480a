// batch: per-cartridge batching (mount criteria, serve the whole queue once mounted), reading in
// logical-block order: each pick is the lowest block queued, wherever the head is. Requests that
// arrive behind the head while the cartridge is mounted are therefore served next (a step back),
// which is what sorting each batch by block (BNL's ERADAT) does with late arrivals.
#include <algorithm>

#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {

size_t PickLowestBlock(std::span<const QueuedRequest> queue, uint64_t, const LocateModel&) {
  // min_element keeps the first of equals: ties go to the older request.
  auto it = std::min_element(queue.begin(), queue.end(), [](const auto& a, const auto& b) {
    return a.start_block < b.start_block;
  });
  return static_cast<size_t>(it - queue.begin());
}

}  // namespace reelfs::gateway::tape

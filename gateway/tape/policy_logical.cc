// logical: batching with strict logical order, one sweep at a time: the next pick is the lowest
// block at or after the head; only when nothing is left ahead does it start again from the lowest
// block (C-SCAN over block numbers). Unlike `batch`, a late arrival behind the head waits for the
// next sweep instead of pulling the head back.
#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {

size_t PickNextSweep(std::span<const QueuedRequest> queue, uint64_t head_block,
                     const LocateModel&) {
  size_t ahead = queue.size(), lowest = 0;
  for (size_t i = 0; i < queue.size(); ++i) {
    const uint64_t b = queue[i].start_block;
    if (b < queue[lowest].start_block) lowest = i;
    if (b >= head_block && (ahead == queue.size() || b < queue[ahead].start_block)) ahead = i;
  }
  return ahead != queue.size() ? ahead : lowest;
}

}  // namespace reelfs::gateway::tape

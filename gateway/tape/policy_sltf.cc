// sltf: batching with Shortest Locate Time First, CTA's software RAO: greedily the queued request
// with the cheapest locate from the head under the cost model (locate_model.h). Greedy SLTF can
// strand a far request (Sandstå & Midtstraum); the library's max-age guard bounds how long.
// O(queue) per pick; CTA caps an RAO batch at a few thousand files for the same reason.
#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {

size_t PickShortestLocate(std::span<const QueuedRequest> queue, uint64_t head_block,
                          const LocateModel& locate) {
  size_t best = 0;
  double best_s = locate.Seconds(head_block, queue[0].start_block);
  for (size_t i = 1; i < queue.size(); ++i) {
    const double s = locate.Seconds(head_block, queue[i].start_block);
    // Strictly cheaper only: ties go to the older request, deterministically.
    if (s < best_s) {
      best = i;
      best_s = s;
    }
  }
  return best;
}

}  // namespace reelfs::gateway::tape

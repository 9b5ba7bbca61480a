// fifo: the naive HSM. No batching; every request is served in arrival order, and a drive unloads
// whatever it holds when the oldest waiting request is on another cartridge. The baseline that
// shows what batching buys (remounts, locate share).
#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {

size_t PickArrivalOrder(std::span<const QueuedRequest>, uint64_t, const LocateModel&) {
  return 0;  // the queue is in arrival order
}

}  // namespace reelfs::gateway::tape

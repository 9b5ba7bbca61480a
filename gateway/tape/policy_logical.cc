// logical: batching with strict logical order, one sweep at a time: the next pick is the lowest
// block at or after the head; only when nothing is left ahead does it start again from the lowest
// block (C-SCAN over block numbers). Unlike `batch`, a late arrival behind the head waits for the
// next sweep instead of pulling the head back.
#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {
namespace {

class LogicalPolicy final : public Policy {
 public:
  std::string_view Name() const override { return "logical"; }
  bool Batches() const override { return true; }
  size_t PickNext(std::span<const QueuedRequest> queue, uint64_t head_block,
                  const LocateModel&) const override {
    size_t ahead = queue.size(), lowest = 0;
    for (size_t i = 0; i < queue.size(); ++i) {
      const uint64_t b = queue[i].start_block;
      if (b < queue[lowest].start_block) lowest = i;
      if (b >= head_block && (ahead == queue.size() || b < queue[ahead].start_block)) ahead = i;
    }
    return ahead != queue.size() ? ahead : lowest;
  }
};

}  // namespace

std::unique_ptr<Policy> MakeLogicalPolicy() { return std::make_unique<LogicalPolicy>(); }

}  // namespace reelfs::gateway::tape

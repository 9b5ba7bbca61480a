// fifo: the naive HSM. No batching; every request is served in arrival order, and a drive unloads
// whatever it holds when the oldest waiting request is on another cartridge. The baseline that
// shows what batching buys (remounts, locate share).
#include "gateway/tape/internal/policy.h"

namespace reelfs::gateway::tape {
namespace {

class FifoPolicy final : public Policy {
 public:
  std::string_view Name() const override { return "fifo"; }
  bool Batches() const override { return false; }
  size_t PickNext(std::span<const QueuedRequest>, uint64_t, const LocateModel&) const override {
    return 0;  // the queue is in arrival order
  }
};

}  // namespace

std::unique_ptr<Policy> MakeFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace reelfs::gateway::tape

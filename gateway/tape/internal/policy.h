// Policy: the pluggable part of the recall scheduler. The library owns the
// mechanics (drives, robots, queues, starvation guard) and asks the policy two questions:
//
//  1. Batches(): per-cartridge batching or not. `fifo` does not batch: drives take requests
//  strictly
//     in arrival order and unload whatever they hold to serve the oldest one (a naive HSM). The
//     others keep per-cartridge queues and serve a mounted cartridge's whole queue.
//  2. PickNext(): which queued request of the mounted cartridge to read next.
//
// Which cartridge a free drive mounts next is the same for every batching policy: among the
// cartridges that meet the mount criteria (MountEligible), the one holding the oldest request
// (arrival order), so no cartridge waits behind younger ones. The criteria are CTA's: enough bytes
// or files queued, or the oldest request older than max_age_s. The starvation guard (a mounted
// drive stops taking requests younger than an overdue cartridge's oldest) is the library's.
//
// Thread-safety: implementations are immutable; called under the library's mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "common/result.h"
#include "gateway/tape/config.h"
#include "gateway/tape/internal/locate_model.h"

namespace reelfs::gateway::tape {

// One queued request of a cartridge, as the policy sees it.
struct QueuedRequest {
  uint64_t id = 0;  // also the arrival order
  uint64_t start_block = 0;
  uint64_t blocks = 0;
  double submitted = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  [[nodiscard]] virtual std::string_view Name() const = 0;
  [[nodiscard]] virtual bool Batches() const = 0;
  // Index into `queue` (arrival order, not empty) of the request to read next, with the head
  // sitting before `head_block`.
  [[nodiscard]] virtual size_t PickNext(std::span<const QueuedRequest> queue, uint64_t head_block,
                                        const LocateModel& locate) const = 0;
};

// Whether a cartridge's queue justifies a mount (batching policies).
[[nodiscard]] bool MountEligible(const SchedulerParams& params, uint64_t files, uint64_t bytes,
                                 double oldest_age_s);

std::unique_ptr<Policy> MakeFifoPolicy();
std::unique_ptr<Policy> MakeBatchPolicy();
std::unique_ptr<Policy> MakeLogicalPolicy();
std::unique_ptr<Policy> MakeSltfPolicy();
// By name (SchedulerParams::policy); InvalidArgument for an unknown one.
[[nodiscard]] Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name);

}  // namespace reelfs::gateway::tape

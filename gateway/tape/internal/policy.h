// Policy: the pluggable part of the recall scheduler. The library owns the mechanics (drives,
// robots, queues, starvation guard) and asks the policy two questions:
//
//  1. batches: per-cartridge batching or not. `fifo` does not batch: drives take requests strictly
//     in arrival order and unload whatever they hold to serve the oldest one (a naive HSM). The
//     others keep per-cartridge queues and serve a mounted cartridge's whole queue.
//  2. pick_next: which queued request of the mounted cartridge to read next.
//
// A policy holds no state, so it is a value: a name, a flag and a function (one file each:
// policy_fifo.cc, policy_batch.cc, policy_logical.cc, policy_sltf.cc), found by name in policy.cc.
//
// Which cartridge a free drive mounts next is the same for every batching policy: among the
// cartridges that meet the mount criteria (MountEligible), the one holding the oldest request
// (arrival order), so no cartridge waits behind younger ones. The criteria are CTA's: enough bytes
// or files queued, or the oldest request older than max_age_s. The starvation guard (a mounted
// drive stops taking requests younger than an overdue cartridge's oldest) is the library's.
//
// Thread-safety: policies are immutable; pick functions are pure and called under the library's
// mutex.
#pragma once

#include <cstdint>
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

// Index into `queue` (arrival order, not empty) of the request to read next, with the head
// sitting before `head_block`.
using PickNextFn = size_t (*)(std::span<const QueuedRequest> queue, uint64_t head_block,
                              const LocateModel& locate);

struct Policy {
  std::string_view name;
  bool batches = true;
  PickNextFn pick_next = nullptr;
};

// Whether a cartridge's queue justifies a mount (batching policies).
[[nodiscard]] bool MountEligible(const SchedulerParams& params, uint64_t files, uint64_t bytes,
                                 double oldest_age_s);

// The picks (the policies' files say what each does and why).
size_t PickArrivalOrder(std::span<const QueuedRequest> queue, uint64_t head_block,
                        const LocateModel& locate);  // fifo
size_t PickLowestBlock(std::span<const QueuedRequest> queue, uint64_t head_block,
                       const LocateModel& locate);  // batch
size_t PickNextSweep(std::span<const QueuedRequest> queue, uint64_t head_block,
                     const LocateModel& locate);  // logical
size_t PickShortestLocate(std::span<const QueuedRequest> queue, uint64_t head_block,
                          const LocateModel& locate);  // sltf

// By name (SchedulerParams::policy); InvalidArgument for an unknown one.
[[nodiscard]] Result<Policy> FindPolicy(std::string_view name);

}  // namespace reelfs::gateway::tape

#include "gateway/tape/internal/policy.h"

#include <array>

#include <fmt/format.h>

namespace reelfs::gateway::tape {

bool MountEligible(const SchedulerParams& params, uint64_t files, uint64_t bytes,
                   double oldest_age_s) {
  if (files == 0) return false;
  if (params.mount_min_bytes > 0 && bytes >= params.mount_min_bytes) return true;
  if (params.mount_min_files > 0 && files >= params.mount_min_files) return true;
  // Both thresholds 0 means "no criteria": mount as soon as anything is queued.
  if (params.mount_min_bytes == 0 && params.mount_min_files == 0) return true;
  return oldest_age_s >= params.max_age_s;
}

Result<Policy> FindPolicy(std::string_view name) {
  static constexpr std::array kPolicies = {
      Policy{.name = "fifo", .batches = false, .pick_next = &PickArrivalOrder},
      Policy{.name = "batch", .batches = true, .pick_next = &PickLowestBlock},
      Policy{.name = "logical", .batches = true, .pick_next = &PickNextSweep},
      Policy{.name = "sltf", .batches = true, .pick_next = &PickShortestLocate},
  };
  for (const Policy& policy : kPolicies) {
    if (policy.name == name) return policy;
  }
  return Status::InvalidArgument(fmt::format("tape.scheduler.policy: unknown policy '{}'", name));
}

}  // namespace reelfs::gateway::tape

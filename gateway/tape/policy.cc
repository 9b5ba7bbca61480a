#include "gateway/tape/internal/policy.h"

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

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name) {
  if (name == "fifo") return MakeFifoPolicy();
  if (name == "batch") return MakeBatchPolicy();
  if (name == "logical") return MakeLogicalPolicy();
  if (name == "sltf") return MakeSltfPolicy();
  return Status::InvalidArgument(fmt::format("tape.scheduler.policy: unknown policy '{}'", name));
}

}  // namespace reelfs::gateway::tape

#include "gateway/tape/internal/geometry.h"

#include <algorithm>

namespace reelfs::gateway::tape {

Geometry::Geometry(const DriveParams& drive, uint64_t block_bytes)
    : block_bytes_(block_bytes),
      capacity_blocks_(drive.capacity_bytes / block_bytes),
      blocks_per_wrap_((capacity_blocks_ + drive.wraps - 1) / drive.wraps),
      wraps_(drive.wraps),
      lpos_min_(drive.lpos_min),
      lpos_max_(drive.lpos_max) {}

Position Geometry::PositionOf(uint64_t block) const {
  block = std::min(block, capacity_blocks_ - 1);
  Position p;
  p.wrap = static_cast<uint32_t>(block / blocks_per_wrap_);
  p.band = p.wrap / (wraps_ / kBands);
  // Fraction of the wrap already recorded before this block: 0 at the wrap's start.
  const double fraction =
      static_cast<double>(block % blocks_per_wrap_) / static_cast<double>(blocks_per_wrap_);
  const double span = lpos_max_ - lpos_min_;
  const double along = fraction * span;
  p.lpos = static_cast<uint32_t>(p.wrap % 2 == 0 ? lpos_min_ + along : lpos_max_ - along);
  return p;
}

}  // namespace reelfs::gateway::tape

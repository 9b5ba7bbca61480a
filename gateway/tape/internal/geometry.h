// Geometry: where a logical block sits on a serpentine cartridge.
//
// 4 data bands, `wraps` wraps (wraps/4 per band, band = wrap / (wraps/4)). Wrap 0 runs BOT->EOT,
// wrap 1 EOT->BOT, and so on. Blocks fill wraps in recording order, CapacityBlocks()/wraps per wrap
// (rounded up), spread evenly over [lpos_min, lpos_max]: this is CTA's linear interpolation inside
// a wrap (InterpolationFilePositionEstimator), with every wrap assumed full.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "gateway/tape/config.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway::tape {

class Geometry {
 public:
  Geometry(const DriveParams& drive, uint64_t block_bytes);

  static constexpr uint32_t kBands = 4;

  [[nodiscard]] uint64_t block_bytes() const { return block_bytes_; }
  [[nodiscard]] uint64_t CapacityBlocks() const { return capacity_blocks_; }
  [[nodiscard]] uint64_t BlocksPerWrap() const { return blocks_per_wrap_; }
  [[nodiscard]] uint32_t wraps() const { return wraps_; }
  [[nodiscard]] uint32_t lpos_min() const { return lpos_min_; }
  [[nodiscard]] uint32_t lpos_max() const { return lpos_max_; }
  // Blocks past the end are clamped to the last block.
  [[nodiscard]] Position PositionOf(uint64_t block) const;
  // Blocks needed for `bytes` (rounded up; 0 bytes is 0 blocks).
  [[nodiscard]] uint64_t BlocksFor(uint64_t bytes) const {
    return (bytes + block_bytes_ - 1) / block_bytes_;
  }

 private:
  uint64_t block_bytes_;
  uint64_t capacity_blocks_;
  uint64_t blocks_per_wrap_;
  uint32_t wraps_;
  uint32_t lpos_min_;
  uint32_t lpos_max_;
};

}  // namespace reelfs::gateway::tape

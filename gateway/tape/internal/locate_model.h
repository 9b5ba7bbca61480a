// LocateModel: how long a drive takes to position from one block to another, with CERN CTA's
// empirical cost heuristic for LTO (CTACostHeuristic in CTA's source, fitted on LTO-7/8
// media), in seconds:
//
//   4.29 + 6.69 [wrap change] + 3.2 [band change] - 6.04 [landing-zone change]
//        + 5.22 [direction change] + 11.32 [step back on the same wrap] + 0.0006192 |dLPOS|
//
// Each bracket is 0 or 1. Direction is the wrap's parity, the landing zone is the half of the tape
// (LPOS below or above the middle), a step back is a target behind the head on its own wrap. The
// total is multiplied by DriveParams::locate_scale. A target at the head's own block costs 0: the
// drive keeps streaming (reading the next extent back to back needs no locate).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "gateway/tape/internal/geometry.h"

namespace reelfs::gateway::tape {

class LocateModel {
 public:
  LocateModel(const Geometry& geometry, double scale) : geometry_(geometry), scale_(scale) {}

  // Seconds from the head sitting before block `from` to the head sitting before block `to`.
  [[nodiscard]] double Seconds(uint64_t from, uint64_t to) const;
  // The same for two physical positions (no "same block" shortcut).
  [[nodiscard]] double Seconds(const Position& from, const Position& to) const;

 private:
  const Geometry& geometry_;
  double scale_;
};

}  // namespace reelfs::gateway::tape

#include "gateway/tape/internal/locate_model.h"

#include <cstdlib>

namespace reelfs::gateway::tape {
namespace {

// CTACostHeuristic coefficients (seconds), LTO-7M media.
constexpr double kConstant = 4.29;
constexpr double kWrapChange = 6.69;
constexpr double kBandChange = 3.2;
constexpr double kLandingZoneChange = -6.04;
constexpr double kDirectionChange = 5.22;
constexpr double kStepBack = 11.32;
constexpr double kPerLpos = 0.0006192;

}  // namespace

double LocateModel::Seconds(uint64_t from, uint64_t to) const {
  if (from == to) return 0;
  return Seconds(geometry_.PositionOf(from), geometry_.PositionOf(to));
}

double LocateModel::Seconds(const Position& from, const Position& to) const {
  const double middle = (static_cast<double>(geometry_.lpos_min()) + geometry_.lpos_max()) / 2;
  const bool wrap_change = from.wrap != to.wrap;
  const bool band_change = from.band != to.band;
  const bool landing_zone_change = (from.lpos < middle) != (to.lpos < middle);
  const bool direction_change = (from.wrap % 2) != (to.wrap % 2);
  // Even wraps run towards higher LPOS, odd wraps towards lower: "behind" depends on the wrap.
  const bool step_back =
      !wrap_change && (from.wrap % 2 == 0 ? to.lpos < from.lpos : to.lpos > from.lpos);
  const double distance = std::abs(static_cast<double>(to.lpos) - static_cast<double>(from.lpos));
  const double cost = kConstant + kWrapChange * wrap_change + kBandChange * band_change +
                      kLandingZoneChange * landing_zone_change +
                      kDirectionChange * direction_change + kStepBack * step_back +
                      kPerLpos * distance;
  return cost * scale_;
}

}  // namespace reelfs::gateway::tape

// RenderTimelineSvg: the library's history as a standalone SVG document: one lane per drive and
// robot, one colored rectangle per activity (labelled with the cartridge where it fits), a time
// axis with ticks and a legend.
//
// Size stays bounded for long runs: intervals narrower than a pixel are merged into their lane
// neighbour of the same activity, at most kMaxRects rectangles are drawn, and anything left out is
// stated in a note on the image.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "gateway/tape/internal/metrics.h"

namespace reelfs::gateway::tape {

inline constexpr size_t kMaxRects = 20'000;

// `lanes`: names, drives then robots (Interval::lane indexes it). `now`: right edge of the axis.
// `dropped`: intervals the recorder already left out (Metrics::kMaxIntervals).
std::string RenderTimelineSvg(const std::vector<std::string>& lanes,
                              std::vector<Interval> intervals, double now, size_t dropped);

}  // namespace reelfs::gateway::tape

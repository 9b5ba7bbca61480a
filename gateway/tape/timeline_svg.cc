#include "gateway/tape/internal/timeline_svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gateway/tape/internal/xml.h"

namespace reelfs::gateway::tape {
namespace {

// Layout, in pixels. Fixed width: the SVG scales in any viewer through its viewBox.
constexpr double kWidth = 1200;
constexpr double kLeft = 90;  // lane names
constexpr double kRight = 20;
constexpr double kTop = 34;  // title
constexpr double kLaneHeight = 22;
constexpr double kLaneGap = 6;
constexpr double kAxisHeight = 34;
constexpr double kLegendHeight = 40;
constexpr double kCharWidth = 6;          // of the 10 px label font, to decide whether a label fits
constexpr size_t kMaxTitledRects = 2000;  // hover titles only while the document stays small

struct Style {
  Activity activity;
  const char* color;
  const char* legend;
};
constexpr Style kStyles[] = {
    {Activity::kLoading, "#f4a261", "loading"},
    {Activity::kLocating, "#e76f51", "locating"},
    {Activity::kReading, "#2a9d8f", "reading"},
    {Activity::kWriting, "#7b2cbf", "writing"},
    {Activity::kRewinding, "#8d99ae", "rewinding"},
    {Activity::kUnloading, "#e9c46a", "unloading"},
    {Activity::kDown, "#343a40", "down"},
    {Activity::kRobotMove, "#457b9d", "robot moving"},
    {Activity::kRobotStall, "#d62828", "robot stalled"},
};

const Style& StyleOf(Activity a) {
  for (const Style& s : kStyles) {
    if (s.activity == a) return s;
  }
  return kStyles[0];
}

struct Rect {
  uint32_t lane;
  Activity activity;
  double x0, x1;
  double start, end;
  std::string label;
  size_t merged = 1;
};

// The axis unit for a span: seconds, minutes or hours, so ticks read "10 min", not "600 s".
std::pair<double, const char*> TickUnit(double span) {
  if (span >= 2 * 3600) return {3600, "h"};
  if (span >= 10 * 60) return {60, "min"};
  return {1, "s"};
}

// A tick step of 1, 2 or 5 times a power of ten (in `unit`s) giving about 10 ticks over `span`.
double TickStep(double span, double unit) {
  const double raw = span / unit / 10;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * power) return m * power * unit;
  }
  return 10 * power * unit;
}

std::vector<Rect> Layout(std::vector<Interval> intervals, double now, double scale) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.start < b.start;
  });
  std::vector<Rect> rects;
  for (Interval& i : intervals) {
    const double x0 = kLeft + std::clamp(i.start, 0.0, now) * scale;
    const double x1 = kLeft + std::clamp(i.end, 0.0, now) * scale;
    if (!rects.empty()) {
      Rect& last = rects.back();
      // Touching (within a pixel) and the same activity: one rectangle.
      if (last.lane == i.lane && last.activity == i.activity && x0 - last.x1 < 1) {
        last.x1 = std::max(last.x1, x1);
        last.end = std::max(last.end, i.end);
        if (last.label != i.label) last.label.clear();
        ++last.merged;
        continue;
      }
    }
    rects.push_back(Rect{i.lane, i.activity, x0, x1, i.start, i.end, std::move(i.label)});
  }
  return rects;
}

}  // namespace

std::string RenderTimelineSvg(const std::vector<std::string>& lanes,
                              std::vector<Interval> intervals, double now, size_t dropped) {
  const double span = now > 0 ? now : 1;
  const double plot_width = kWidth - kLeft - kRight;
  const double scale = plot_width / span;
  const double lanes_height = static_cast<double>(lanes.size()) * (kLaneHeight + kLaneGap);
  const double axis_y = kTop + lanes_height;
  const double height = axis_y + kAxisHeight + kLegendHeight;

  std::vector<Rect> rects = Layout(std::move(intervals), span, scale);
  size_t hidden = dropped;
  if (rects.size() > kMaxRects) {
    // Keep the longest ones: the picture's shape survives, slivers go.
    std::stable_sort(rects.begin(), rects.end(),
                     [](const Rect& a, const Rect& b) { return a.x1 - a.x0 > b.x1 - b.x0; });
    for (size_t i = kMaxRects; i < rects.size(); ++i) hidden += rects[i].merged;
    rects.resize(kMaxRects);
  }

  std::string out;
  out.reserve(256 + rects.size() * 120);
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"10\">\n",
      kWidth, height);
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     kWidth, height);
  out += fmt::format(
      "<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">tape library timeline "
      "(simulated time, {:.1f} s)</text>\n",
      kLeft, now);

  for (size_t l = 0; l < lanes.size(); ++l) {
    const double y = kTop + static_cast<double>(l) * (kLaneHeight + kLaneGap);
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f1f3f5\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y, plot_width, kLaneHeight, kLeft - 6, y + kLaneHeight / 2 + 4, XmlEscape(lanes[l]));
  }

  const bool titles = rects.size() <= kMaxTitledRects;
  for (const Rect& r : rects) {
    if (r.lane >= lanes.size()) continue;
    const double y = kTop + static_cast<double>(r.lane) * (kLaneHeight + kLaneGap);
    const double w = std::max(r.x1 - r.x0, 0.5);
    const Style& style = StyleOf(r.activity);
    out += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\">",
                       r.x0, y, w, kLaneHeight, style.color);
    if (titles) {
      out += fmt::format("<title>{} {} {:.1f}-{:.1f} s</title>", style.legend, XmlEscape(r.label),
                         r.start, r.end);
    }
    out += "</rect>";
    if (!r.label.empty() && w >= kCharWidth * static_cast<double>(r.label.size()) + 4) {
      out += fmt::format("<text x=\"{:.2f}\" y=\"{}\" fill=\"#ffffff\">{}</text>", r.x0 + 2,
                         y + kLaneHeight / 2 + 4, XmlEscape(r.label));
    }
    out += "\n";
  }

  // Time axis.
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#000000\"/>\n",
                     kLeft, axis_y, kLeft + plot_width);
  const auto [unit, unit_name] = TickUnit(span);
  const double step = TickStep(span, unit);
  for (int i = 0; i * step <= span * (1 + 1e-9); ++i) {
    const double t = i * step;
    const double x = kLeft + t * scale;
    out += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#000000\"/>"
        "<text x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, axis_y, axis_y + 5, axis_y + 17, fmt::format("{:g} {}", t / unit, unit_name));
  }

  // Legend.
  const double legend_y = axis_y + kAxisHeight;
  double x = kLeft;
  for (const Style& s : kStyles) {
    out += fmt::format(
        "<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" fill=\"{2}\"/>"
        "<text x=\"{3}\" y=\"{4}\">{5}</text>\n",
        x, legend_y, s.color, x + 16, legend_y + 10, s.legend);
    x += 40 + kCharWidth * static_cast<double>(std::char_traits<char>::length(s.legend));
  }
  if (hidden > 0) {
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#d62828\">note: {} short intervals not drawn (cap {} "
        "rectangles)</text>\n",
        kLeft, legend_y + 30, hidden, kMaxRects);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace reelfs::gateway::tape

#include "common/prom_text.h"

#include <limits>

#include <doctest/doctest.h>

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("PromText: families, escaped labels, whole and fractional values, +Inf") {
    PromText p;
    p.Family("x_total", "counter", "two\nlines");
    p.Sample("x_total", {{"path", "a\"b\\c\nd"}, {"code", "200"}}, 3);
    p.Gauge("g", "a gauge", 0.25);
    p.Sample("h_bucket", {{"le", "+Inf"}}, std::numeric_limits<double>::infinity());
    p.Sample("big", 1e16);
    CHECK(p.text() ==
          "# HELP x_total two lines\n# TYPE x_total counter\n"
          "x_total{path=\"a\\\"b\\\\c\\nd\",code=\"200\"} 3\n"
          "# HELP g a gauge\n# TYPE g gauge\ng 0.25\n"
          "h_bucket{le=\"+Inf\"} +Inf\n"
          "big 1e+16\n");
  }

  TEST_CASE("PromText: histogram samples are cumulative, +Inf counts values above every bound") {
    PromText p;
    const double bounds[] = {0.1, 1};
    const uint64_t counts[] = {2, 0, 3};  // two <= 0.1, none in (0.1, 1], three above 1
    p.HistogramSamples("d", {{"op", "read"}}, bounds, counts, 7.5);
    CHECK(p.text() ==
          "d_bucket{op=\"read\",le=\"0.1\"} 2\n"
          "d_bucket{op=\"read\",le=\"1\"} 2\n"
          "d_bucket{op=\"read\",le=\"+Inf\"} 5\n"
          "d_sum{op=\"read\"} 7.5\n"
          "d_count{op=\"read\"} 5\n");
  }
}

}  // namespace
}  // namespace reelfs

// PromText: the Prometheus text exposition format (version 0.0.4), written by hand because no
// well-kept C++ library for it is in Debian. A family is declared once (# HELP, # TYPE), then its
// samples follow; label values are escaped (backslash, double quote, newline); values print as
// integers when they are whole, else with full precision; +Inf as "+Inf". Checked by promtool in
// the tests of the gateway's /metrics.
//
// Thread-safety: none; one writer per exposition.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reelfs {

class PromText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // "counter", "gauge" or "histogram". A counter's name should end in "_total".
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample line; `name` is the family's or, for a histogram, with _bucket/_sum/_count.
  void Sample(std::string_view name, const Labels& labels, double value);
  void Sample(std::string_view name, double value) { Sample(name, {}, value); }
  // Family + one unlabelled sample.
  void Counter(std::string_view name, std::string_view help, double value);
  void Gauge(std::string_view name, std::string_view help, double value);
  // A histogram's samples (its Family declared before): NAME_bucket{labels, le} for each bound
  // and +Inf, cumulative, then NAME_sum and NAME_count. `counts` holds one count per bucket, not
  // cumulative, and one more for the values above every bound.
  void HistogramSamples(std::string_view name, const Labels& labels, std::span<const double> bounds,
                        std::span<const uint64_t> counts, double sum);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// The content type of the format, for the HTTP answer.
inline constexpr std::string_view kPromContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace reelfs

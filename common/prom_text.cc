#include "common/prom_text.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace reelfs {
namespace {

void AppendEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

}  // namespace

void PromText::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += fmt::format("# HELP {} ", name);
  for (char c : help) out_ += c == '\n' ? ' ' : c;  // HELP is one line
  out_ += fmt::format("\n# TYPE {} {}\n", name, type);
}

void PromText::Sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      AppendEscaped(out_, labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  if (std::isinf(value)) {
    out_ += value > 0 ? "+Inf" : "-Inf";
  } else if (std::isnan(value)) {
    out_ += "NaN";
  } else if (value == std::floor(value) && std::fabs(value) < 9.0e15) {
    out_ += fmt::format("{}", static_cast<int64_t>(value));
  } else {
    out_ += fmt::format("{}", value);  // shortest form that reads back exactly
  }
  out_ += '\n';
}

void PromText::Counter(std::string_view name, std::string_view help, double value) {
  Family(name, "counter", help);
  Sample(name, value);
}

void PromText::Gauge(std::string_view name, std::string_view help, double value) {
  Family(name, "gauge", help);
  Sample(name, value);
}

void PromText::HistogramSamples(std::string_view name, const Labels& labels,
                                std::span<const double> bounds, std::span<const uint64_t> counts,
                                double sum) {
  const std::string base(name);
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= bounds.size(); ++b) {
    cumulative += b < counts.size() ? counts[b] : 0;
    with_le.back().second = b < bounds.size() ? fmt::format("{}", bounds[b]) : "+Inf";
    Sample(base + "_bucket", with_le, static_cast<double>(cumulative));
  }
  Sample(base + "_sum", labels, sum);
  Sample(base + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace reelfs

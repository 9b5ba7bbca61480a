#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "common/strings.h"

namespace reelfs {
namespace {

// Splits "  12.5 MiB " into 12.5 and "mib". Fails on anything that is not number + unit.
Result<std::pair<double, std::string>> SplitNumberUnit(std::string_view text) {
  const std::string s(Trim(text));
  if (s.empty()) return Status::InvalidArgument("empty value");
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return Status::InvalidArgument("'" + s + "' does not start with a number");
  std::string number = s.substr(0, i);
  if (number.find('.') != number.rfind('.')) {
    return Status::InvalidArgument("'" + s + "' is not a number");
  }
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) {
    return Status::InvalidArgument("'" + s + "' is not a number");
  }
  return std::make_pair(value, Lower(Trim(std::string_view(s).substr(i))));
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  auto split = SplitNumberUnit(text);
  if (!split.ok()) return split.status().WithContext("byte size");
  auto [value, unit] = *split;
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb")
    mult = 1e3;
  else if (unit == "m" || unit == "mb")
    mult = 1e6;
  else if (unit == "g" || unit == "gb")
    mult = 1e9;
  else if (unit == "t" || unit == "tb")
    mult = 1e12;
  else if (unit == "kib")
    mult = static_cast<double>(kKiB);
  else if (unit == "mib")
    mult = static_cast<double>(kMiB);
  else if (unit == "gib")
    mult = static_cast<double>(kGiB);
  else if (unit == "tib")
    mult = static_cast<double>(kGiB) * 1024.0;
  else
    return Status::InvalidArgument("byte size '" + std::string(text) +
                                   "': unknown unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  double bytes = value * mult;
  if (bytes >= 1.8e19) return Status::OutOfRange("byte size '" + std::string(text) + "' too large");
  if (bytes != std::floor(bytes)) {
    return Status::InvalidArgument("byte size '" + std::string(text) + "' is not whole bytes");
  }
  return static_cast<uint64_t>(bytes);
}

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  auto split = SplitNumberUnit(text);
  if (!split.ok()) return split.status().WithContext("duration");
  auto [value, unit] = *split;
  double ns_per = 0;
  if (unit == "ns")
    ns_per = 1;
  else if (unit == "us")
    ns_per = 1e3;
  else if (unit == "ms")
    ns_per = 1e6;
  else if (unit.empty() || unit == "s")
    ns_per = 1e9;
  else if (unit == "m" || unit == "min")
    ns_per = 60e9;
  else if (unit == "h")
    ns_per = 3600e9;
  else if (unit == "d")
    ns_per = 86400e9;
  else
    return Status::InvalidArgument("duration '" + std::string(text) +
                                   "': unknown unit (ns, us, ms, s, m, h, d)");
  double ns = value * ns_per;
  if (ns >= 9.2e18) return Status::OutOfRange("duration '" + std::string(text) + "' too large");
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

std::string FormatByteSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

}  // namespace reelfs

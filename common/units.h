// Byte sizes and durations written with units, as config files and flags use them:
// "16MiB", "1GiB", "512", "8 KiB", "1.5GB"; "30s", "250ms", "2m", "1h", "100us".
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// Accepts B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024), case-insensitive
// unit, optional space, optional fraction. A bare number is bytes.
Result<uint64_t> ParseByteSize(std::string_view text);

// Accepts ns, us, ms, s, m, h, d; a bare number is seconds.
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// "8.0 MiB", "1.2 GiB", "512 B".
std::string FormatByteSize(uint64_t bytes);

// `value` rounded down / up to a multiple of `alignment` (> 0): part, block and page boundaries.
constexpr uint64_t AlignDown(uint64_t value, uint64_t alignment) {
  return value - value % alignment;
}
constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return AlignDown(value + alignment - 1, alignment);
}

}  // namespace reelfs

// tape::LibraryConfig: every parameter of the simulated library, with LTO-9 full-height defaults
// (from the drive and library vendors' data sheets) and presets for other drives. Loaded from the
// `tape:` section of the gateway's YAML (LoadLibraryConfigYaml); unknown keys are rejected.
//
// Thread-safety: plain structs; the loader functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/status.h"

namespace reelfs::gateway::tape {

enum class SimMode {
  kDiscrete,  // events run back to back, only inside RunUntilIdle (benchmarks, unit tests)
  kScaled,    // a thread advances simulated time at `speedup` x real time (1 = real time)
};

struct DriveParams {
  std::string model = "LTO-9 FH";
  double rate_mb_s = 400;  // native, decimal MB/s
  double load_s = 17;      // load-to-ready
  double unload_s = 30;
  // Rewind inside unload, by what the mount did: < small_gb contiguous, < medium_gb, other.
  double rewind_small_s = 55, rewind_medium_s = 110, rewind_large_s = 165;
  double rewind_small_gb = 5, rewind_medium_gb = 50;
  uint64_t capacity_bytes = 18'000'000'000'000ull;
  uint32_t wraps = 280;  // 4 bands
  uint32_t lpos_min = 2696, lpos_max = 171097;
  double locate_scale = 1.0;  // multiplies the CTA cost model
};

struct SchedulerParams {
  std::string policy = "batch";  // fifo | batch | logical | sltf
  uint64_t mount_min_bytes = 0;  // batch: mount once a cartridge's queue holds this many bytes
  uint64_t mount_min_files = 1;  //   ... or this many requests
  double max_age_s = 600;        //   ... or its oldest request is this old (no starvation)
};

struct LibraryConfig {
  std::string preset = "lto9";  // lto8 | lto9 | lto9hh | lto10: fills `drive`
  DriveParams drive;
  uint32_t drives = 4;
  uint32_t robots = 1;
  double robot_move_s = 12;
  uint64_t block_bytes = 256 * 1024;
  SchedulerParams scheduler;
  SimMode mode = SimMode::kScaled;
  double speedup = 1000;
  uint64_t seed = 1;  // every random choice (fault probabilities) is seeded
};

// The preset's DriveParams; InvalidArgument for an unknown name.
[[nodiscard]] Result<DriveParams> Preset(std::string_view name);

// InvalidArgument naming the offending key ("tape.drive.wraps: ...") when `config` cannot run.
[[nodiscard]] Status ValidateLibraryConfig(const LibraryConfig& config);

// Parses the `tape:` section (YAML text of that mapping): the preset first, then overrides, then
// ValidateLibraryConfig. Unknown keys are InvalidArgument with their path ("tape.drive.rate").
// Keys: preset, drive.{model, rate_mb_s, load_s, unload_s, rewind_{small,medium,large}_s,
// rewind_{small,medium}_gb, capacity_bytes, wraps, lpos_min, lpos_max, locate_scale}, drives,
// robots, robot_move_s, block_bytes, scheduler.{policy, mount_min_bytes, mount_min_files,
// max_age_s}, mode (discrete | scaled), speedup, seed.
[[nodiscard]] Result<LibraryConfig> LoadLibraryConfigYaml(std::string_view yaml);

}  // namespace reelfs::gateway::tape

// Presets, validation and the YAML loader for LibraryConfig. The only yaml-cpp code in the tape
// module (docs/conventions.md "Options"): everything else takes the plain struct.
#include "gateway/tape/config.h"

#include <cmath>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace reelfs::gateway::tape {
namespace {

// The "average space record time from load point" of each drive (vendors' data sheets) divided by
// LTO-9 FH's 45 s: the CTA cost model was fitted on one drive generation, so other drives scale it
// by how much slower their published mean locate is.
constexpr double kLto9MeanLocateS = 45;

DriveParams Lto9() { return DriveParams{}; }  // config.h's defaults are LTO-9 FH

DriveParams Lto9Hh() {
  DriveParams d;
  d.model = "LTO-9 HH";
  d.rate_mb_s = 300;
  d.load_s = 16;
  d.unload_s = 56;
  d.rewind_small_s = 62;
  d.rewind_medium_s = 124;
  d.rewind_large_s = 186;
  d.locate_scale = 65 / kLto9MeanLocateS;
  return d;
}

DriveParams Lto8() {
  DriveParams d;
  d.model = "LTO-8 FH";
  d.rate_mb_s = 360;
  d.load_s = 15;
  d.unload_s = 24;
  // Placeholder: LTO-8's rewind inside unload is not published; LTO-9 FH values.
  d.capacity_bytes = 12'000'000'000'000ull;
  d.wraps = 208;  // 4 bands x 52 wraps (lto-info cm.go)
  // Placeholder: LPOS range of the CTA test media (LTO-7), like LTO-9.
  d.locate_scale = 60 / kLto9MeanLocateS;  // Versity: ~60 s BOT -> middle
  return d;
}

DriveParams Lto10() {
  DriveParams d;
  d.model = "LTO-10 FH";
  d.rate_mb_s = 400;
  d.load_s = 12;
  d.unload_s = 27;
  // LTO-10 has no archive-mode unthread; its average REWIND is 62 s (LA media) whatever the mount
  // did.
  d.rewind_small_s = d.rewind_medium_s = d.rewind_large_s = 62;
  d.capacity_bytes = 30'000'000'000'000ull;  // LA media; PA is 40 TB
  // Placeholder: LTO-10 geometry is not published; LTO-9's wraps and LPOS range.
  d.locate_scale = 65 / kLto9MeanLocateS;
  return d;
}

Status Invalid(std::string_view key, std::string_view why) {
  return Status::InvalidArgument(fmt::format("tape.{}: {}", key, why));
}

}  // namespace

Result<DriveParams> Preset(std::string_view name) {
  if (name == "lto9") return Lto9();
  if (name == "lto9hh") return Lto9Hh();
  if (name == "lto8") return Lto8();
  if (name == "lto10") return Lto10();
  return Status::InvalidArgument(
      fmt::format("tape.preset: unknown preset '{}' (lto8, lto9, lto9hh, lto10)", name));
}

Status ValidateLibraryConfig(const LibraryConfig& c) {
  const DriveParams& d = c.drive;
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  auto non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  if (!positive(d.rate_mb_s)) return Invalid("drive.rate_mb_s", "must be > 0");
  if (!non_negative(d.load_s)) return Invalid("drive.load_s", "must be >= 0");
  if (!non_negative(d.unload_s)) return Invalid("drive.unload_s", "must be >= 0");
  if (!non_negative(d.rewind_small_s)) return Invalid("drive.rewind_small_s", "must be >= 0");
  if (!non_negative(d.rewind_medium_s)) return Invalid("drive.rewind_medium_s", "must be >= 0");
  if (!non_negative(d.rewind_large_s)) return Invalid("drive.rewind_large_s", "must be >= 0");
  if (!non_negative(d.rewind_small_gb) || d.rewind_medium_gb < d.rewind_small_gb) {
    return Invalid("drive.rewind_medium_gb", "must be >= drive.rewind_small_gb >= 0");
  }
  if (d.wraps < 4 || d.wraps % 4 != 0) return Invalid("drive.wraps", "must be a multiple of 4");
  if (d.lpos_max <= d.lpos_min) return Invalid("drive.lpos_max", "must be > drive.lpos_min");
  if (!positive(d.locate_scale)) return Invalid("drive.locate_scale", "must be > 0");
  if (c.block_bytes == 0) return Invalid("block_bytes", "must be > 0");
  if (d.capacity_bytes / c.block_bytes < d.wraps) {
    return Invalid("drive.capacity_bytes", "must hold at least one block per wrap");
  }
  if (c.drives == 0 || c.drives > 1024) return Invalid("drives", "must be 1..1024");
  if (c.robots == 0 || c.robots > 64) return Invalid("robots", "must be 1..64");
  if (!non_negative(c.robot_move_s)) return Invalid("robot_move_s", "must be >= 0");
  const std::string& p = c.scheduler.policy;
  if (p != "fifo" && p != "batch" && p != "logical" && p != "sltf") {
    return Invalid("scheduler.policy",
                   fmt::format("unknown policy '{}' (fifo, batch, logical, sltf)", p));
  }
  if (!positive(c.scheduler.max_age_s)) return Invalid("scheduler.max_age_s", "must be > 0");
  if (c.mode == SimMode::kScaled && !positive(c.speedup)) return Invalid("speedup", "must be > 0");
  return Status::Ok();
}

namespace {

// Reads one scalar into `out`, naming the key path on failure. yaml-cpp throws on conversion
// errors; the caller's try block turns anything else into InvalidArgument.
template <class T>
Status Read(const YAML::Node& node, const std::string& path, T* out) {
  if (!node.IsScalar()) return Invalid(path, "must be a scalar");
  if constexpr (std::is_unsigned_v<T>) {
    // yaml-cpp happily converts "-1" to a huge unsigned value.
    if (!node.Scalar().empty() && node.Scalar()[0] == '-') return Invalid(path, "must be >= 0");
  }
  T value{};
  if (!YAML::convert<T>::decode(node, value)) {
    return Invalid(path, fmt::format("cannot parse '{}'", node.Scalar()));
  }
  *out = value;
  return Status::Ok();
}

Status ReadDrive(const YAML::Node& node, DriveParams* d) {
  if (!node.IsMap()) return Invalid("drive", "must be a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = "drive." + key;
    const YAML::Node& v = kv.second;
    if (key == "model") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->model));
    } else if (key == "rate_mb_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rate_mb_s));
    } else if (key == "load_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->load_s));
    } else if (key == "unload_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->unload_s));
    } else if (key == "rewind_small_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rewind_small_s));
    } else if (key == "rewind_medium_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rewind_medium_s));
    } else if (key == "rewind_large_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rewind_large_s));
    } else if (key == "rewind_small_gb") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rewind_small_gb));
    } else if (key == "rewind_medium_gb") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->rewind_medium_gb));
    } else if (key == "capacity_bytes") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->capacity_bytes));
    } else if (key == "wraps") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->wraps));
    } else if (key == "lpos_min") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->lpos_min));
    } else if (key == "lpos_max") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->lpos_max));
    } else if (key == "locate_scale") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &d->locate_scale));
    } else {
      return Invalid(path, "unknown key");
    }
  }
  return Status::Ok();
}

Status ReadScheduler(const YAML::Node& node, SchedulerParams* s) {
  if (!node.IsMap()) return Invalid("scheduler", "must be a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = "scheduler." + key;
    const YAML::Node& v = kv.second;
    if (key == "policy") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &s->policy));
    } else if (key == "mount_min_bytes") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &s->mount_min_bytes));
    } else if (key == "mount_min_files") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &s->mount_min_files));
    } else if (key == "max_age_s") {
      REELFS_RETURN_IF_ERROR(Read(v, path, &s->max_age_s));
    } else {
      return Invalid(path, "unknown key");
    }
  }
  return Status::Ok();
}

Status ReadTop(const YAML::Node& root, LibraryConfig* c) {
  if (!root.IsMap()) return Status::InvalidArgument("tape: must be a mapping");
  // The preset goes first, whatever its place in the text, so explicit drive keys override it.
  if (const YAML::Node p = root["preset"]; p) {
    REELFS_RETURN_IF_ERROR(Read(p, "preset", &c->preset));
  }
  REELFS_ASSIGN_OR_RETURN(c->drive, Preset(c->preset));
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "preset") {
      continue;
    } else if (key == "drive") {
      REELFS_RETURN_IF_ERROR(ReadDrive(v, &c->drive));
    } else if (key == "scheduler") {
      REELFS_RETURN_IF_ERROR(ReadScheduler(v, &c->scheduler));
    } else if (key == "drives") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->drives));
    } else if (key == "robots") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->robots));
    } else if (key == "robot_move_s") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->robot_move_s));
    } else if (key == "block_bytes") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->block_bytes));
    } else if (key == "mode") {
      std::string mode;
      REELFS_RETURN_IF_ERROR(Read(v, key, &mode));
      if (mode == "discrete") {
        c->mode = SimMode::kDiscrete;
      } else if (mode == "scaled") {
        c->mode = SimMode::kScaled;
      } else {
        return Invalid(key, fmt::format("unknown mode '{}' (discrete, scaled)", mode));
      }
    } else if (key == "speedup") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->speedup));
    } else if (key == "seed") {
      REELFS_RETURN_IF_ERROR(Read(v, key, &c->seed));
    } else {
      return Invalid(key, "unknown key");
    }
  }
  return ValidateLibraryConfig(*c);
}

}  // namespace

Result<LibraryConfig> LoadLibraryConfigYaml(std::string_view yaml) {
  LibraryConfig config;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) {
      REELFS_RETURN_IF_ERROR(ValidateLibraryConfig(config));
      return config;
    }
    REELFS_RETURN_IF_ERROR(ReadTop(root, &config));
  } catch (const std::exception& e) {
    // yaml-cpp reports syntax errors (with line and column) by exception; none may escape.
    return Status::InvalidArgument(fmt::format("tape: {}", e.what()));
  }
  return config;
}

}  // namespace reelfs::gateway::tape

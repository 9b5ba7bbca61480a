// Presets, validation and the YAML loader (with configs/tape-lto9.yaml).
#include "gateway/tape/config.h"

#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

namespace reelfs::gateway::tape {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Contains(const Status& st, std::string_view what) {
  return std::string(st.message()).find(what) != std::string::npos;
}

TEST_CASE("config: presets") {
  auto lto9 = Preset("lto9");
  REQUIRE(lto9.ok());
  CHECK(lto9->rate_mb_s == 400);
  CHECK(lto9->capacity_bytes == 18'000'000'000'000ull);
  auto hh = Preset("lto9hh");
  REQUIRE(hh.ok());
  CHECK(hh->rate_mb_s == 300);
  CHECK(hh->unload_s == 56);
  CHECK(hh->rewind_large_s == 186);
  CHECK(hh->locate_scale > 1);
  auto lto8 = Preset("lto8");
  REQUIRE(lto8.ok());
  CHECK(lto8->capacity_bytes == 12'000'000'000'000ull);
  CHECK(lto8->wraps == 208);
  auto lto10 = Preset("lto10");
  REQUIRE(lto10.ok());
  CHECK(lto10->capacity_bytes == 30'000'000'000'000ull);
  CHECK(lto10->load_s == 12);
  auto bad = Preset("dlt");
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status(), "tape.preset"));
  for (const char* name : {"lto8", "lto9", "lto9hh", "lto10"}) {
    LibraryConfig c;
    c.drive = *Preset(name);
    CHECK_MESSAGE(ValidateLibraryConfig(c).ok(), name);
  }
}

TEST_CASE("config: the example configs/tape-lto9.yaml loads") {
  const std::string text = ReadFile(REELFS_SOURCE_DIR "/configs/tape-lto9.yaml");
  REQUIRE_FALSE(text.empty());
  auto c = LoadLibraryConfigYaml(text);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  CHECK(c->preset == "lto9");
  CHECK(c->drive.model == "LTO-9 FH");
  CHECK(c->drives == 4);
  CHECK(c->robots == 1);
  CHECK(c->scheduler.policy == "sltf");
  CHECK(c->mode == SimMode::kScaled);
  CHECK(c->speedup == 1000);
}

TEST_CASE("config: preset first, then overrides, whatever the key order") {
  auto c = LoadLibraryConfigYaml(
      "drive:\n  rate_mb_s: 250\n  wraps: 200\npreset: lto9hh\ndrives: 8\nmode: discrete\n"
      "scheduler:\n  policy: fifo\n  max_age_s: 30\n  mount_min_bytes: 1000000\n"
      "seed: 42\nblock_bytes: 524288\nrobot_move_s: 9.5\nrobots: 2\nspeedup: 10\n");
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  CHECK(c->drive.model == "LTO-9 HH");  // from the preset
  CHECK(c->drive.unload_s == 56);       // from the preset
  CHECK(c->drive.rate_mb_s == 250);     // override
  CHECK(c->drive.wraps == 200);
  CHECK(c->drives == 8);
  CHECK(c->robots == 2);
  CHECK(c->robot_move_s == 9.5);
  CHECK(c->block_bytes == 524288);
  CHECK(c->mode == SimMode::kDiscrete);
  CHECK(c->scheduler.policy == "fifo");
  CHECK(c->scheduler.max_age_s == 30);
  CHECK(c->scheduler.mount_min_bytes == 1000000);
  CHECK(c->seed == 42);
  CHECK(c->speedup == 10);

  auto empty = LoadLibraryConfigYaml("");
  REQUIRE(empty.ok());
  CHECK(empty->drive.rate_mb_s == 400);
}

TEST_CASE("config: unknown keys and bad values name the key path") {
  auto top = LoadLibraryConfigYaml("drivez: 4\n");
  REQUIRE_FALSE(top.ok());
  CHECK(Contains(top.status(), "tape.drivez"));
  auto nested = LoadLibraryConfigYaml("drive:\n  rate: 400\n");
  REQUIRE_FALSE(nested.ok());
  CHECK(Contains(nested.status(), "tape.drive.rate"));
  auto sched = LoadLibraryConfigYaml("scheduler:\n  polcy: fifo\n");
  REQUIRE_FALSE(sched.ok());
  CHECK(Contains(sched.status(), "tape.scheduler.polcy"));
  auto policy = LoadLibraryConfigYaml("scheduler:\n  policy: random\n");
  REQUIRE_FALSE(policy.ok());
  CHECK(Contains(policy.status(), "tape.scheduler.policy"));
  auto number = LoadLibraryConfigYaml("drives: many\n");
  REQUIRE_FALSE(number.ok());
  CHECK(Contains(number.status(), "tape.drives"));
  auto negative = LoadLibraryConfigYaml("drive:\n  capacity_bytes: -5\n");
  REQUIRE_FALSE(negative.ok());
  CHECK(Contains(negative.status(), "tape.drive.capacity_bytes"));
  auto wraps = LoadLibraryConfigYaml("drive:\n  wraps: 6\n");
  REQUIRE_FALSE(wraps.ok());
  CHECK(Contains(wraps.status(), "tape.drive.wraps"));
  auto mode = LoadLibraryConfigYaml("mode: realtime\n");
  REQUIRE_FALSE(mode.ok());
  CHECK(Contains(mode.status(), "tape.mode"));
  CHECK_FALSE(LoadLibraryConfigYaml("preset: lto7\n").ok());
  CHECK_FALSE(LoadLibraryConfigYaml("drive: [1, 2]\n").ok());
  CHECK_FALSE(LoadLibraryConfigYaml("- 1\n- 2\n").ok());
  auto syntax = LoadLibraryConfigYaml("drive: {unclosed\n");
  REQUIRE_FALSE(syntax.ok());
  CHECK(syntax.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reelfs::gateway::tape

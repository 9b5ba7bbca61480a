// tape_timeline_demo OUT.svg: runs a small mixed workload (4 drives, 2 robots, 12 cartridges, a
// drive failure and a robot stall) in discrete time and writes the library's timeline SVG, for
// the browser rendering test (timeline_browser.sh) and for people who want to look at one.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "gateway/tape/library.h"

namespace tape = reelfs::gateway::tape;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.svg\n", argv[0]);
    return 2;
  }
  tape::LibraryConfig config;
  config.mode = tape::SimMode::kDiscrete;
  config.drives = 4;
  config.robots = 2;
  config.scheduler.policy = "sltf";
  auto created = tape::Library::Create(config);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<tape::Library> lib = std::move(created).value();
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint64_t> block(0, lib->CapacityBlocks() - 100'000);
  std::uniform_int_distribution<uint64_t> bytes(1'000'000'000, 20'000'000'000);
  for (int i = 0; i < 12; ++i) {
    if (!lib->AddCartridge("RL" + std::to_string(1000 + i) + "L9").ok()) return 1;
  }
  lib->Inject({.kind = tape::Fault::Kind::kRobotStall, .duration = tape::SimDuration(60)});
  for (int i = 0; i < 150; ++i) {
    const std::string cart = "RL" + std::to_string(1000 + static_cast<int>(rng() % 12)) + "L9";
    lib->Submit({"demo/" + std::to_string(i), {cart, block(rng), bytes(rng)}}, nullptr);
  }
  lib->Inject({.kind = tape::Fault::Kind::kDriveDown, .target = "drive3"});
  lib->RunUntilIdle();
  std::ofstream out(argv[1]);
  out << lib->TimelineSvg();
  std::printf("%s\n", lib->MetricsJson().c_str());
  return out.good() ? 0 : 1;
}

// reelfs-tape-scale: the seed's claim, "50 drives stream about 20 GB/s", in the tape library
// simulator in discrete time (bench/tape/README.md "At the seed's scale").
//
// A library of --drives LTO drives and --cartridges cartridges holds --petabytes of objects of
// --min-gb..--max-gb (uniform, seeded), written in key order from block 0 of each cartridge. A job
// of --hosts client hosts stages all of it through --gateways front ends: the dataset is split
// into one contiguous key range per host (its shard), each host submits its objects in tape
// order (the order `reelfs stage` uses: cartridges by first key, then block), and the hosts'
// requests reach the one process that owns the library interleaved, one per host in turn, all at
// time 0 (the front ends only forward). For each policy the run reports the makespan, the
// aggregate streaming efficiency (bytes read / (makespan x drives x native rate)), mounts, and the
// lower bound of bench/tape/lower_bound.py for the same layout, plus the CPU the simulator (the
// scheduler and the event loop) spent per request.
//
//   reelfs-tape-scale                                  # 50 drives, 1 000 cartridges, 2 PB
//   reelfs-tape-scale --min-gb 1 --max-gb 3 --policies batch   # ~1 M requests
//   reelfs-tape-scale --svg /tmp/t.svg --policies batch
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "CLI/CLI.hpp"
#include "gateway/tape/library.h"

namespace tape = reelfs::gateway::tape;

namespace {

struct Object {
  uint32_t cartridge;
  uint64_t start_block;
  uint64_t bytes;
};

struct Options {
  uint32_t drives = 50;
  uint32_t robots = 2;
  uint32_t cartridges = 1000;
  double petabytes = 2.0;
  double min_gb = 1, max_gb = 20;
  uint32_t hosts = 64;
  uint32_t gateways = 8;
  double max_age_s = 600;
  std::vector<std::string> policies{"fifo", "batch", "logical", "sltf"};
  std::string svg;
  uint64_t seed = 1;
  double require_efficiency = 0;  // exit 1 when the best policy streams less (CTest smoke run)
};

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string CartridgeName(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "RL%04uL9", c);
  return buf;
}

// Objects in key order: cartridge 0 first, each filled from block 0 up to its share of the bytes.
std::vector<Object> MakeDataset(const Options& o, uint64_t block_bytes) {
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<uint64_t> size(static_cast<uint64_t>(o.min_gb * 1e9),
                                               static_cast<uint64_t>(o.max_gb * 1e9));
  const auto per_cartridge = static_cast<uint64_t>(o.petabytes * 1e15 / o.cartridges);
  std::vector<Object> out;
  for (uint32_t c = 0; c < o.cartridges; ++c) {
    uint64_t used = 0, block = 0;
    while (used < per_cartridge) {
      const uint64_t n = std::min(size(rng), per_cartridge - used);
      out.push_back({c, block, n});
      used += n;
      block += (n + block_bytes - 1) / block_bytes;
    }
  }
  return out;
}

// bench/tape/lower_bound.py's bound for contiguous objects from block 0 (no locates).
double LowerBound(const Options& o, const tape::LibraryConfig& cfg,
                  const std::vector<uint64_t>& bytes_per_cartridge) {
  const tape::DriveParams& p = cfg.drive;
  const double rate = p.rate_mb_s * 1e6;
  double mounts = 0, longest = 0;
  std::vector<double> swaps;
  for (uint64_t b : bytes_per_cartridge) {
    const double m = p.load_s + static_cast<double>(b) / rate;
    mounts += m;
    longest = std::max(longest, m);
    const double gb = static_cast<double>(b) / 1e9;
    const double rewind = gb < p.rewind_small_gb    ? p.rewind_small_s
                          : gb < p.rewind_medium_gb ? p.rewind_medium_s
                                                    : p.rewind_large_s;
    swaps.push_back(std::max(rewind + p.unload_s, cfg.robot_move_s));
  }
  const size_t c = bytes_per_cartridge.size();
  const size_t d = std::min<size_t>(o.drives, c);
  std::sort(swaps.begin(), swaps.end());
  double swap_sum = 0;
  for (size_t i = 0; i + d < c; ++i) swap_sum += swaps[i];
  double fetches = 0;
  for (size_t k = 0; k < d; ++k)
    fetches += static_cast<double>(k / cfg.robots + 1) * cfg.robot_move_s;
  return std::max((mounts + swap_sum + fetches) / static_cast<double>(d),
                  cfg.robot_move_s + longest);
}

int Run(const Options& o) {
  tape::LibraryConfig cfg;
  cfg.mode = tape::SimMode::kDiscrete;
  cfg.drives = o.drives;
  cfg.robots = o.robots;
  cfg.scheduler.max_age_s = o.max_age_s;
  if (auto s = tape::ValidateLibraryConfig(cfg); !s.ok()) {
    std::fprintf(stderr, "reelfs-tape-scale: %s\n", s.ToString().c_str());
    return 2;
  }
  const std::vector<Object> objects = MakeDataset(o, cfg.block_bytes);
  std::vector<uint64_t> per_cartridge(o.cartridges, 0);
  uint64_t total = 0;
  for (const Object& ob : objects) {
    per_cartridge[ob.cartridge] += ob.bytes;
    total += ob.bytes;
  }
  // Each host's shard: a contiguous key range, already in tape order (key order is cartridge,
  // then block, here). Arrival at the library: one request per host in turn.
  std::vector<size_t> order;
  order.reserve(objects.size());
  const size_t hosts = std::max<uint32_t>(1, o.hosts);
  const size_t per_host = (objects.size() + hosts - 1) / hosts;
  for (size_t step = 0; step < per_host; ++step) {
    for (size_t h = 0; h < hosts; ++h) {
      const size_t i = h * per_host + step;
      if (i < objects.size()) order.push_back(i);
    }
  }
  const double lb = LowerBound(o, cfg, per_cartridge);
  const double rate = cfg.drive.rate_mb_s * 1e6;
  std::printf(
      "# %u drives (%s, %.0f MB/s native: %.1f GB/s aggregate), %u robots, %u cartridges,"
      " %.3f PB in %zu objects of %.0f-%.0f GB; %u hosts through %u gateways\n",
      o.drives, cfg.drive.model.c_str(), cfg.drive.rate_mb_s, o.drives * cfg.drive.rate_mb_s / 1e3,
      o.robots, o.cartridges, static_cast<double>(total) / 1e15, objects.size(), o.min_gb, o.max_gb,
      o.hosts, o.gateways);
  std::printf(
      "| policy | makespan (s) | vs lower bound | streaming efficiency | aggregate GB/s |"
      " mounts | max per cartridge | sim CPU per request (us) |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::printf("| lower bound | %.0f | 1.000 | %.3f | %.2f | %u | 1 | |\n", lb,
              static_cast<double>(total) / (lb * o.drives * rate),
              static_cast<double>(total) / lb / 1e9, o.cartridges);
  int rc = 0;
  double best = 0;
  for (const std::string& policy : o.policies) {
    tape::LibraryConfig run = cfg;
    run.scheduler.policy = policy;
    auto created = tape::Library::Create(run);
    if (!created.ok()) {
      std::fprintf(stderr, "reelfs-tape-scale: %s\n", created.status().ToString().c_str());
      return 2;
    }
    std::unique_ptr<tape::Library> lib = std::move(created).value();
    for (uint32_t c = 0; c < o.cartridges; ++c) {
      if (!lib->AddCartridge(CartridgeName(c)).ok()) return 2;
    }
    uint64_t ok = 0, failed = 0;
    const double cpu0 = CpuSeconds();
    for (size_t i : order) {
      const Object& ob = objects[i];
      lib->Submit({"", {CartridgeName(ob.cartridge), ob.start_block, ob.bytes}},
                  [&](const tape::RecallCompletion& c) {
                    (c.outcome == tape::RecallOutcome::kOk ? ok : failed)++;
                  });
    }
    const double makespan = lib->RunUntilIdle().count();
    const double cpu = CpuSeconds() - cpu0;
    const reelfs::Json m = lib->MetricsDocument();
    const auto& mounts = m["mounts"];
    uint64_t max_per = 0;
    for (const auto& [cart, n] : mounts["per_cartridge"].items()) {
      max_per = std::max<uint64_t>(max_per, n.get<uint64_t>());
    }
    std::printf("| %s | %.0f | %.3f | %.3f | %.2f | %" PRIu64 " | %" PRIu64 " | %.1f |\n",
                policy.c_str(), makespan, makespan / lb,
                static_cast<double>(total) / (makespan * o.drives * rate),
                static_cast<double>(total) / makespan / 1e9, mounts["total"].get<uint64_t>(),
                max_per, cpu / static_cast<double>(order.size()) * 1e6);
    std::fflush(stdout);
    best = std::max(best, static_cast<double>(total) / (makespan * o.drives * rate));
    if (ok != order.size() || failed != 0) {
      std::fprintf(stderr,
                   "reelfs-tape-scale: %s: %" PRIu64 " of %zu recalls ok, %" PRIu64 " failed\n",
                   policy.c_str(), ok, order.size(), failed);
      rc = 1;
    }
    if (!o.svg.empty() && policy == o.policies.back()) {
      std::ofstream(o.svg) << lib->TimelineSvg();
    }
  }
  if (best < o.require_efficiency) {
    std::fprintf(stderr,
                 "reelfs-tape-scale: the best policy streamed %.3f of the drives' native "
                 "rate, below --require-efficiency %.3f\n",
                 best, o.require_efficiency);
    rc = 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"The tape library simulator at the seed's scale (bench/tape/README.md)"};
  app.add_option("--drives", o.drives)->check(CLI::Range(1u, 10000u));
  app.add_option("--robots", o.robots)->check(CLI::Range(1u, 64u));
  app.add_option("--cartridges", o.cartridges)->check(CLI::Range(1u, 1000000u));
  app.add_option("--petabytes", o.petabytes)->check(CLI::PositiveNumber);
  app.add_option("--min-gb", o.min_gb)->check(CLI::PositiveNumber);
  app.add_option("--max-gb", o.max_gb)->check(CLI::PositiveNumber);
  app.add_option("--hosts", o.hosts)->check(CLI::Range(1u, 100000u));
  app.add_option("--gateways", o.gateways)->check(CLI::Range(1u, 10000u));
  app.add_option("--max-age", o.max_age_s, "scheduler.max_age_s (s)");
  app.add_option("--policies", o.policies)->delimiter(',');
  app.add_option("--svg", o.svg, "the last policy's timeline");
  app.add_option("--seed", o.seed);
  app.add_option("--require-efficiency", o.require_efficiency,
                 "exit 1 if the best policy's streaming efficiency is below this");
  CLI11_PARSE(app, argc, argv);
  if (o.min_gb > o.max_gb) {
    std::fprintf(stderr, "reelfs-tape-scale: --min-gb above --max-gb\n");
    return 2;
  }
  return Run(o);
}

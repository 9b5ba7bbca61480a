// The drive state machine and the facade: exact durations of one recall, mount reuse, unload
// timing, shutdown, geometry accessors; archive writes (SubmitWrite) and their metrics.
#include <doctest/doctest.h>

#include "gateway/tape/internal/geometry.h"
#include "gateway/tape/internal/locate_model.h"
#include "tests/unit/gateway/tape/tape_test_util.h"

namespace reelfs::gateway::tape {
namespace {

constexpr uint64_t kMB = 1'000'000;

TEST_CASE("library: one recall on an empty library = robot move + load + locate + read") {
  LibraryConfig config = DiscreteConfig("fifo");
  auto lib = MakeLibrary(config);
  REQUIRE(lib->AddCartridge("RL0001L9").ok());
  const Geometry geometry(config.drive, config.block_bytes);
  const LocateModel locate(geometry, config.drive.locate_scale);
  const uint64_t block = 12'345'678;
  const uint64_t bytes = 800 * kMB;

  Completions c;
  const uint64_t id = lib->Submit(Recall("RL0001L9", block, bytes), c.Callback());
  CHECK(c.done.empty());  // nothing runs before RunUntilIdle in kDiscrete mode
  const SimDuration end = lib->RunUntilIdle();
  REQUIRE(c.done.size() == 1);
  const RecallCompletion& r = c.done[0];
  CHECK(r.id == id);
  CHECK(r.outcome == RecallOutcome::kOk);
  CHECK(r.drive == "drive0");
  CHECK(r.submitted.count() == 0);
  const double locate_s = locate.Seconds(0, block);
  CHECK(locate_s > 4.29);
  CHECK(r.first_byte.count() == doctest::Approx(12 + 17 + locate_s));
  CHECK(r.done.count() == doctest::Approx(12 + 17 + locate_s + 2.0));  // 800 MB at 400 MB/s
  CHECK(end.count() == doctest::Approx(r.done.count()));
  CHECK(lib->Mounts() == 1);
  CHECK(lib->StateOf(0) == DriveState::kReady);  // stays mounted until another cartridge needs it
  CHECK(lib->TotalSeconds(Activity::kLocating) == doctest::Approx(locate_s));
  CHECK(lib->TotalSeconds(Activity::kReading) == doctest::Approx(2.0));
  CHECK(lib->TotalSeconds(Activity::kLoading) == doctest::Approx(17));
  CHECK(lib->TotalSeconds(Activity::kRobotMove) == doctest::Approx(12));
}

TEST_CASE("library: a second cartridge on one drive: fetched during the rewind, no robot wait") {
  LibraryConfig config = DiscreteConfig("fifo");
  auto lib = MakeLibrary(config);
  REQUIRE(lib->AddCartridge("A").ok());
  REQUIRE(lib->AddCartridge("B").ok());
  const Geometry geometry(config.drive, config.block_bytes);
  const LocateModel locate(geometry, config.drive.locate_scale);
  Completions c;
  lib->Submit(Recall("A", 0, 400 * kMB), c.Callback());
  lib->Submit(Recall("B", 1000, 400 * kMB), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 2);
  // A: fetch 12 + load 17 + no locate (block 0 is under the head at BOT) + read 1.
  CHECK(c.done[0].done.count() == doctest::Approx(30));
  // B: rewind 55 (< 5 GB moved) + unload 30 + load 17 + locate + read 1. The robot fetched B
  // while A rewound and puts A away after the exchange: neither move is on B's path.
  CHECK(c.done[1].done.count() == doctest::Approx(30 + 55 + 30 + 17 + locate.Seconds(0, 1000) + 1));
  CHECK(lib->TotalSeconds(Activity::kRobotMove) == doctest::Approx(3 * 12));
  CHECK(lib->Mounts() == 2);
  CHECK(lib->TotalSeconds(Activity::kRewinding) == doctest::Approx(55));
  CHECK(lib->TotalSeconds(Activity::kUnloading) == doctest::Approx(30));
}

// "activity cartridge" for each interval of `lane`, in time order.
std::vector<std::string> Lane(const LibraryImpl& lib, uint32_t lane) {
  std::vector<std::string> out;
  for (const Interval& i : lib.Intervals()) {
    if (i.lane == lane) out.push_back(std::string(ActivityName(i.activity)) + " " + i.label);
  }
  return out;
}

TEST_CASE("library: drive and robot state sequences for two cartridges on one drive") {
  auto lib = MakeLibrary(DiscreteConfig("fifo"));
  REQUIRE(lib->AddCartridge("A").ok());
  REQUIRE(lib->AddCartridge("B").ok());
  Completions c;
  lib->Submit(Recall("A", 5000, 400 * kMB), c.Callback());
  lib->Submit(Recall("B", 5000, 400 * kMB), c.Callback());
  lib->RunUntilIdle();
  CHECK(Lane(*lib, 0) == std::vector<std::string>{"loading A", "locating A", "reading A",
                                                  "rewinding A", "unloading A", "loading B",
                                                  "locating B", "reading B"});
  CHECK(Lane(*lib, 1) ==
        std::vector<std::string>{"robot_move A", "robot_move B", "robot_move A \u2190"});
  CHECK(lib->StateOf(0) == DriveState::kReady);
}

TEST_CASE("library: a drive that goes down while unloading hands its next cartridge back") {
  auto lib = MakeLibrary(DiscreteConfig("batch", 1));
  REQUIRE(lib->AddCartridge("A").ok());
  REQUIRE(lib->AddCartridge("B").ok());
  Completions c;
  lib->Submit(Recall("A", 0, 400 * kMB), c.Callback());
  lib->Submit(Recall("B", 0, 400 * kMB), c.Callback());
  // A read by 30, rewinding 30..85, unloading 85..115; B fetched ahead 30..42, waiting.
  lib->RunUntil(SimDuration(100));
  REQUIRE(lib->StateOf(0) == DriveState::kUnloading);
  lib->Inject(Fault{.kind = Fault::Kind::kDriveDown, .target = "drive0"});
  // A's put-away 100..112, then B's 112..124; the unload that would have ended at 115 is a
  // no-op event now.
  const double up_at = lib->RunUntilIdle().count();
  CHECK(up_at == doctest::Approx(124));
  CHECK(c.done.size() == 1);  // B waits: no drive
  lib->Inject(Fault{.kind = Fault::Kind::kDriveUp, .target = "drive0"});
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 2);
  CHECK(c.done[1].outcome == RecallOutcome::kOk);
  CHECK(c.done[1].done.count() == doctest::Approx(up_at + 12 + 17 + 1));  // fetch, load, read
}

TEST_CASE("library: rewind before unload is 55/110/165 s by bytes moved in the mount") {
  for (auto [gb, rewind] : {std::pair{1.0, 55.0}, {10.0, 110.0}, {60.0, 165.0}}) {
    const auto& gb_ = gb;  // clang 14 cannot capture a structured binding
    CAPTURE(gb_);
    auto lib = MakeLibrary(DiscreteConfig("fifo"));
    REQUIRE(lib->AddCartridge("A").ok());
    REQUIRE(lib->AddCartridge("B").ok());
    Completions c;
    lib->Submit(Recall("A", 0, static_cast<uint64_t>(gb * 1e9)), c.Callback());
    lib->Submit(Recall("B", 0, 1), c.Callback());
    lib->RunUntilIdle();
    CHECK(lib->TotalSeconds(Activity::kRewinding) == doctest::Approx(rewind));
  }
}

TEST_CASE("library: requests for a mounted cartridge reuse the mount, back to back") {
  auto lib = MakeLibrary(DiscreteConfig("batch"));
  REQUIRE(lib->AddCartridge("A").ok());
  Completions c;
  const uint64_t blocks = (400 * kMB + lib->BlockBytes() - 1) / lib->BlockBytes();
  lib->Submit(Recall("A", 0, 400 * kMB), c.Callback());
  lib->Submit(Recall("A", blocks, 400 * kMB), c.Callback());  // starts where the first ends
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 2);
  CHECK(c.done[1].done.count() == doctest::Approx(12 + 17 + 1 + 1));  // no locate in between
  CHECK(lib->Mounts() == 1);
  CHECK(lib->TotalSeconds(Activity::kLocating) == 0);
}

TEST_CASE("library: unknown cartridge and extents past capacity complete with kMediaError") {
  auto lib = MakeLibrary(DiscreteConfig());
  REQUIRE(lib->AddCartridge("A").ok());
  CHECK(lib->AddCartridge("A").ok());  // idempotent
  CHECK_FALSE(lib->AddCartridge("").ok());
  CHECK_FALSE(lib->AddCartridge("has space").ok());
  Completions c;
  lib->Submit(Recall("nope", 0, 1), c.Callback());
  lib->Submit(Recall("A", lib->CapacityBlocks(), 1), c.Callback());
  lib->Submit(Recall("A", lib->CapacityBlocks() - 1, 2 * lib->BlockBytes()), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 3);
  for (const auto& r : c.done) {
    CHECK(r.outcome == RecallOutcome::kMediaError);
    CHECK_FALSE(r.detail.empty());
    CHECK(r.drive.empty());
  }
  CHECK(lib->Mounts() == 0);
}

TEST_CASE("library: destruction completes outstanding recalls with kShutdown") {
  Completions c;
  {
    auto lib = MakeLibrary(DiscreteConfig());
    REQUIRE(lib->AddCartridge("A").ok());
    lib->Submit(Recall("A", 5, 1), c.Callback());
    lib->Submit(Recall("A", 9, 1), c.Callback());
    lib->RunUntil(SimDuration(20));  // mid-load
  }
  REQUIRE(c.done.size() == 2);
  for (const auto& r : c.done) CHECK(r.outcome == RecallOutcome::kShutdown);
}

TEST_CASE("library: Create rejects a bad config with the key") {
  LibraryConfig config = DiscreteConfig();
  config.scheduler.policy = "lifo";
  auto lib = Library::Create(config);
  REQUIRE_FALSE(lib.ok());
  CHECK(lib.status().code() == StatusCode::kInvalidArgument);
  CHECK(std::string(lib.status().message()).find("scheduler.policy") != std::string::npos);
  config = DiscreteConfig();
  config.drives = 0;
  CHECK_FALSE(Library::Create(config).ok());
}

}  // namespace
}  // namespace reelfs::gateway::tape

namespace reelfs::gateway::tape {
namespace {

TEST_CASE("library: a write = robot move + load + position to end of data + stream, as writing") {
  LibraryConfig config = DiscreteConfig("fifo");
  auto lib = MakeLibrary(config);
  REQUIRE(lib->AddCartridge("W").ok());
  const Geometry geometry(config.drive, config.block_bytes);
  const LocateModel locate(geometry, config.drive.locate_scale);
  const uint64_t eod = 5'000'000;  // blocks already on the cartridge
  Completions c;
  lib->SubmitWrite(Recall("W", eod, 800 * kMB, "W: 3 objects"), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 1);
  CHECK(c.done[0].outcome == RecallOutcome::kOk);
  CHECK(c.done[0].drive == "drive0");
  const double locate_s = locate.Seconds(0, eod);
  CHECK(c.done[0].done.count() == doctest::Approx(12 + 17 + locate_s + 2.0));
  CHECK(lib->TotalSeconds(Activity::kWriting) == doctest::Approx(2.0));
  CHECK(lib->TotalSeconds(Activity::kReading) == 0);

  // A recall after it on the same cartridge is served by the same mount; the metrics keep the
  // write apart from the recalls, and the timeline draws both.
  lib->Submit(Recall("W", eod, 400 * kMB), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 2);
  CHECK(lib->Mounts() == 1);
  Json m = lib->MetricsDocument();
  CHECK(m["writes"]["submitted"] == 1);
  CHECK(m["writes"]["ok"] == 1);
  CHECK(m["writes"]["pending"] == 0);
  CHECK(m["bytes_written"] == 800 * kMB);
  CHECK(m["requests"]["submitted"] == 1);
  CHECK(m["requests"]["ok"] == 1);
  CHECK(m["bytes_read"] == 400 * kMB);
  CHECK(m["drive_time_s"]["writing"].get<double>() == doctest::Approx(2.0));
  const std::string svg = lib->TimelineSvg();
  CHECK(svg.find("<title>writing W ") != std::string::npos);
  CHECK(svg.find("<title>reading W ") != std::string::npos);
}

TEST_CASE("library: writes fail on a damaged or unknown cartridge, never by stage_fail") {
  auto lib = MakeLibrary(DiscreteConfig("fifo"));
  REQUIRE(lib->AddCartridge("OK").ok());
  REQUIRE(lib->AddCartridge("BAD").ok());
  lib->Inject(Fault{.kind = Fault::Kind::kMediaError, .target = "BAD"});
  lib->Inject(Fault{.kind = Fault::Kind::kStageFail, .probability = 1.0});
  Completions c;
  lib->SubmitWrite(Recall("OK", 0, kMB), c.Callback());
  lib->SubmitWrite(Recall("BAD", 0, kMB), c.Callback());
  lib->SubmitWrite(Recall("NONE", 0, kMB), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 3);
  int ok = 0, media = 0;
  for (const auto& d : c.done) {
    ok += d.outcome == RecallOutcome::kOk;
    media += d.outcome == RecallOutcome::kMediaError;
  }
  CHECK(ok == 1);
  CHECK(media == 2);
  Json m = lib->MetricsDocument();
  CHECK(m["writes"]["ok"] == 1);
  CHECK(m["writes"]["failed"] == 2);
  CHECK(m["requests"]["stage_fail"] == 0);
}

}  // namespace
}  // namespace reelfs::gateway::tape

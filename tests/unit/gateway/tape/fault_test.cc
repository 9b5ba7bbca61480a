// Injected faults: media error, drive down/up (the recall in flight is requeued, not lost), robot
// stall, stage failure with a seeded probability.
#include <doctest/doctest.h>

#include "gateway/tape/internal/geometry.h"
#include "gateway/tape/internal/locate_model.h"
#include "tests/unit/gateway/tape/tape_test_util.h"

namespace reelfs::gateway::tape {
namespace {

constexpr uint64_t kMB = 1'000'000;

TEST_CASE("fault: a media error fails that cartridge's recalls only") {
  auto lib = MakeLibrary(DiscreteConfig("batch", 2));
  REQUIRE(lib->AddCartridge("A").ok());
  REQUIRE(lib->AddCartridge("B").ok());
  lib->Inject(Fault{.kind = Fault::Kind::kMediaError, .target = "A"});
  Completions c;
  lib->Submit(Recall("A", 10, kMB), c.Callback());
  lib->Submit(Recall("B", 10, kMB), c.Callback());
  lib->Submit(Recall("A", 20, kMB), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 3);
  int media = 0, ok = 0;
  for (const auto& r : c.done) {
    if (r.outcome == RecallOutcome::kMediaError) {
      ++media;
      CHECK(r.detail.find("A") != std::string::npos);
      CHECK_FALSE(r.drive.empty());
    }
    ok += r.outcome == RecallOutcome::kOk;
  }
  CHECK(media == 2);
  CHECK(ok == 1);
}

TEST_CASE("fault: drive down mid-read requeues the recall; another drive serves it") {
  auto lib = MakeLibrary(DiscreteConfig("batch", 2));
  REQUIRE(lib->AddCartridge("A").ok());
  Completions c;
  lib->Submit(Recall("A", 0, 40'000 * kMB), c.Callback());  // 100 s read from t=29
  lib->RunUntil(SimDuration(50));
  REQUIRE(lib->StateOf(0) == DriveState::kReading);
  lib->Inject(Fault{.kind = Fault::Kind::kDriveDown, .target = "drive0"});
  CHECK(lib->StateOf(0) == DriveState::kDown);
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 1);
  CHECK(c.done[0].outcome == RecallOutcome::kOk);
  CHECK(c.done[0].drive == "drive1");
  // Put-away 12 (from t=50), fetch 12, load 17, read 100.
  CHECK(c.done[0].done.count() == doctest::Approx(50 + 12 + 12 + 17 + 100));
  CHECK(lib->StateOf(0) == DriveState::kDown);
  const std::string json = lib->MetricsJson();
  CHECK(json.find(R"("requeued":1)") != std::string::npos);
  lib->Inject(Fault{.kind = Fault::Kind::kDriveUp, .target = "drive0"});
  CHECK(lib->StateOf(0) == DriveState::kEmpty);
}

TEST_CASE("fault: the only drive down: the recall waits for drive up") {
  auto lib = MakeLibrary(DiscreteConfig("fifo", 1));
  REQUIRE(lib->AddCartridge("A").ok());
  Completions c;
  lib->Submit(Recall("A", 0, 400 * kMB), c.Callback());
  lib->RunUntil(SimDuration(5));  // the robot is carrying A
  lib->Inject(Fault{.kind = Fault::Kind::kDriveDown, .target = "drive0"});
  lib->RunUntilIdle();  // A goes back to its slot
  CHECK(c.done.empty());
  lib->RunUntil(SimDuration(100));
  lib->Inject(Fault{.kind = Fault::Kind::kDriveUp, .target = "drive0"});
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 1);
  CHECK(c.done[0].outcome == RecallOutcome::kOk);
  CHECK(c.done[0].done.count() == doctest::Approx(100 + 12 + 17 + 1));
  lib->Inject(Fault{.kind = Fault::Kind::kDriveDown, .target = "no-such-drive"});  // ignored
}

TEST_CASE("fault: a robot stall delays the moves that have not started") {
  LibraryConfig config = DiscreteConfig("fifo", 1);
  auto lib = MakeLibrary(config);
  REQUIRE(lib->AddCartridge("A").ok());
  lib->Inject(Fault{.kind = Fault::Kind::kRobotStall, .duration = SimDuration(100)});
  Completions c;
  lib->Submit(Recall("A", 0, 400 * kMB), c.Callback());
  lib->RunUntilIdle();
  REQUIRE(c.done.size() == 1);
  CHECK(c.done[0].done.count() == doctest::Approx(100 + 12 + 17 + 1));
  CHECK(lib->MetricsJson().find(R"("robot_stall_s":100)") != std::string::npos);
}

TEST_CASE("fault: stage failures with a seeded probability are reproducible") {
  auto run = [](double p, uint64_t seed) {
    LibraryConfig config = DiscreteConfig("batch", 2);
    config.seed = seed;
    auto lib = MakeLibrary(config);
    REQUIRE(lib->AddCartridge("A").ok());
    lib->Inject(Fault{.kind = Fault::Kind::kStageFail, .probability = p});
    Completions c;
    for (uint64_t b = 0; b < 200; ++b) lib->Submit(Recall("A", b * 10, kMB), c.Callback());
    lib->RunUntilIdle();
    std::vector<RecallOutcome> outcomes;
    for (const auto& r : c.done) outcomes.push_back(r.outcome);
    return outcomes;
  };
  const auto all = run(1.0, 1);
  CHECK(std::count(all.begin(), all.end(), RecallOutcome::kStageFail) == 200);
  const auto none = run(0.0, 1);
  CHECK(std::count(none.begin(), none.end(), RecallOutcome::kOk) == 200);
  const auto half = run(0.5, 9);
  const auto fails = std::count(half.begin(), half.end(), RecallOutcome::kStageFail);
  CHECK(fails > 60);
  CHECK(fails < 140);
  CHECK(run(0.5, 9) == half);  // same seed, same outcomes
}

}  // namespace
}  // namespace reelfs::gateway::tape

// kScaled mode: the library's own thread advances simulated time at speedup x real time. Submit
// from several threads at once (run under ASan/UBSan too); destruction fails what is outstanding.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include <doctest/doctest.h>

#include "tests/unit/gateway/tape/tape_test_util.h"

namespace reelfs::gateway::tape {
namespace {

TEST_CASE("scaled: concurrent Submit from 4 threads, all complete on the simulation thread") {
  LibraryConfig config;
  config.mode = SimMode::kScaled;
  config.speedup = 1e6;  // an hour of simulated time in ~4 ms
  config.drives = 3;
  config.scheduler.policy = "sltf";
  auto created = Library::Create(config);
  REQUIRE(created.ok());
  std::unique_ptr<Library> lib = std::move(created).value();
  for (int i = 0; i < 8; ++i) REQUIRE(lib->AddCartridge("C" + std::to_string(i)).ok());

  constexpr int kThreads = 4, kPerThread = 50;
  std::mutex mu;
  std::condition_variable cv;
  std::set<uint64_t> ids;
  int ok = 0, done = 0;
  std::thread::id sim_thread;
  bool one_thread = true;
  auto callback = [&](const RecallCompletion& c) {
    std::lock_guard lock(mu);
    if (done == 0) sim_thread = std::this_thread::get_id();
    one_thread = one_thread && sim_thread == std::this_thread::get_id();
    ids.insert(c.id);
    ok += c.outcome == RecallOutcome::kOk;
    ++done;
    cv.notify_all();
  };
  std::vector<std::thread> threads;
  std::atomic<int> submitted{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        lib->Submit(Recall("C" + std::to_string((t + i) % 8), 1000 * (i + 1), 1'000'000), callback);
        ++submitted;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(submitted == kThreads * kPerThread);
  std::unique_lock lock(mu);
  const bool all =
      cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kThreads * kPerThread; });
  REQUIRE(all);
  CHECK(ok == kThreads * kPerThread);
  CHECK(ids.size() == static_cast<size_t>(kThreads * kPerThread));
  CHECK(one_thread);
  CHECK(sim_thread != std::this_thread::get_id());
  CHECK(lib->Now().count() > 29);  // at least one fetch + load happened in simulated time
  CHECK(lib->MetricsJson().find(R"("ok":200)") != std::string::npos);
  CHECK(lib->RunUntilIdle().count() >= 0);  // a no-op in kScaled mode
}

TEST_CASE("scaled: destruction fails outstanding recalls with kShutdown and joins") {
  LibraryConfig config;
  config.mode = SimMode::kScaled;
  config.speedup = 1;  // real time: nothing finishes before the destructor
  std::atomic<int> shutdown{0};
  {
    auto created = Library::Create(config);
    REQUIRE(created.ok());
    std::unique_ptr<Library> lib = std::move(created).value();
    REQUIRE(lib->AddCartridge("A").ok());
    for (int i = 0; i < 5; ++i) {
      lib->Submit(Recall("A", 100 * i, 1), [&](const RecallCompletion& c) {
        shutdown += c.outcome == RecallOutcome::kShutdown;
      });
    }
  }
  CHECK(shutdown == 5);
}

}  // namespace
}  // namespace reelfs::gateway::tape

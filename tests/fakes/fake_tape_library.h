// FakeTapeLibrary: a tape::Library for unit tests of the gateway's archive. Nothing is simulated:
// recalls queue until the test calls CompleteAll / CompleteNext (with an outcome), on the test's
// own thread; writes complete at once, inside SubmitWrite, with set_write_outcome's outcome
// (kOk by default), after set_on_write's hook, and are recorded (writes()); geometry is fixed
// (block size from the constructor, 1 000 000 blocks per cartridge, position = block / 1000 as
// wrap, block % 1000 as lpos).
//
// Thread-safety: every member is safe from any thread; callbacks run on the thread that calls
// Complete*, without the fake's lock held.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gateway/tape/library.h"

namespace reelfs::testing {

class FakeTapeLibrary : public gateway::tape::Library {
 public:
  using Completion = gateway::tape::RecallCompletion;
  using Outcome = gateway::tape::RecallOutcome;

  explicit FakeTapeLibrary(uint64_t block_bytes = 4096) : block_bytes_(block_bytes) {}
  ~FakeTapeLibrary() override { CompleteAll(Outcome::kShutdown); }

  uint64_t BlockBytes() const override { return block_bytes_; }
  uint64_t CapacityBlocks() const override { return 1'000'000; }
  gateway::tape::Position PositionOf(uint64_t block) const override {
    return {static_cast<uint32_t>(block / 1000), 0, static_cast<uint32_t>(block % 1000)};
  }
  Status AddCartridge(std::string_view cartridge) override {
    std::lock_guard lock(mu_);
    cartridges_.insert(std::string(cartridge));
    return Status::Ok();
  }
  uint64_t Submit(gateway::tape::RecallRequest request,
                  std::function<void(const Completion&)> done) override {
    std::lock_guard lock(mu_);
    const uint64_t id = ++next_id_;
    submitted_.push_back(request);
    pending_.push_back({id, std::move(request), std::move(done)});
    return id;
  }
  uint64_t SubmitWrite(gateway::tape::RecallRequest request,
                       std::function<void(const Completion&)> done) override {
    Completion c;
    std::function<void()> hook;
    {
      std::lock_guard lock(mu_);
      c.id = ++next_id_;
      c.outcome = write_outcome_;
      writes_.push_back(request);
      hook = on_write_;
    }
    if (hook) hook();  // a test's race: runs while the writer waits for the drive
    c.drive = "fake0";
    if (c.outcome != Outcome::kOk) c.detail = "fake write failure";
    done(c);
    return c.id;
  }
  void Inject(const gateway::tape::Fault& fault) override {
    std::lock_guard lock(mu_);
    injected_.push_back(fault);
  }
  gateway::tape::SimDuration RunUntilIdle() override { return Now(); }
  gateway::tape::SimDuration Now() const override { return gateway::tape::SimDuration(now_s_); }
  Json MetricsDocument() const override { return Json{{"fake", true}}; }
  std::string TimelineSvg() const override { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>"; }

  // Completes every queued recall with `outcome`; returns how many.
  size_t CompleteAll(Outcome outcome = Outcome::kOk) {
    size_t n = 0;
    while (CompleteNext(outcome)) ++n;
    return n;
  }
  bool CompleteNext(Outcome outcome = Outcome::kOk) {
    Pending p;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) return false;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    Completion c;
    c.id = p.id;
    c.outcome = outcome;
    c.drive = "fake0";
    if (outcome != Outcome::kOk) c.detail = "fake failure";
    p.done(c);
    return true;
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return pending_.size();
  }
  std::vector<gateway::tape::RecallRequest> submitted() const {
    std::lock_guard lock(mu_);
    return submitted_;
  }
  std::vector<gateway::tape::RecallRequest> writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }
  void set_on_write(std::function<void()> hook) {
    std::lock_guard lock(mu_);
    on_write_ = std::move(hook);
  }
  void set_write_outcome(Outcome outcome) {
    std::lock_guard lock(mu_);
    write_outcome_ = outcome;
  }
  std::vector<gateway::tape::Fault> injected() const {
    std::lock_guard lock(mu_);
    return injected_;
  }
  std::set<std::string> cartridges() const {
    std::lock_guard lock(mu_);
    return cartridges_;
  }
  void set_now(double seconds) { now_s_ = seconds; }

 private:
  struct Pending {
    uint64_t id = 0;
    gateway::tape::RecallRequest request;
    std::function<void(const Completion&)> done;
  };
  const uint64_t block_bytes_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 0;
  std::deque<Pending> pending_;
  std::vector<gateway::tape::RecallRequest> submitted_;
  std::vector<gateway::tape::Fault> injected_;
  std::vector<gateway::tape::RecallRequest> writes_;
  Outcome write_outcome_ = Outcome::kOk;
  std::function<void()> on_write_;
  std::set<std::string> cartridges_;
  std::atomic<double> now_s_{0};
};

}  // namespace reelfs::testing

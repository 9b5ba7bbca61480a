// LibraryImpl: the tape::Library behind Library::Create. Declared here (not in library.h) so unit
// tests and benchmarks can reach what the facade does not promise: RunUntil for fault timing and
// the raw totals behind MetricsJson.
//
// One mutex (mu_) guards every piece of simulation state; events run with it held and completion
// callbacks run after it is released (collected in ready_). Lock order: mu_ is the only lock; the
// scaled driver's condition variable waits on it.
//
// Thread-safety: every public member is safe from any thread (library.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "gateway/tape/config.h"
#include "gateway/tape/internal/drive.h"
#include "gateway/tape/internal/event_queue.h"
#include "gateway/tape/internal/geometry.h"
#include "gateway/tape/internal/locate_model.h"
#include "gateway/tape/internal/metrics.h"
#include "gateway/tape/internal/policy.h"
#include "gateway/tape/internal/robots.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway::tape {

class LibraryImpl final : public Library {
 public:
  LibraryImpl(const LibraryConfig& config, const Policy& policy);
  ~LibraryImpl() override;

  uint64_t BlockBytes() const override { return geometry_.block_bytes(); }
  uint64_t CapacityBlocks() const override { return geometry_.CapacityBlocks(); }
  Position PositionOf(uint64_t block) const override { return geometry_.PositionOf(block); }
  Status AddCartridge(std::string_view cartridge) override;
  uint64_t Submit(RecallRequest request,
                  std::function<void(const RecallCompletion&)> done) override;
  uint64_t SubmitWrite(RecallRequest request,
                       std::function<void(const RecallCompletion&)> done) override;
  void Inject(const Fault& fault) override;
  SimDuration RunUntilIdle() override;
  SimDuration Now() const override;
  Json MetricsDocument() const override;
  std::string TimelineSvg() const override;

  // kDiscrete only: runs the events due at or before `t`, then moves the clock to `t`.
  SimDuration RunUntil(SimDuration t);
  // Simulated seconds all drives (or robots) spent on `activity` so far.
  [[nodiscard]] double TotalSeconds(Activity activity) const;
  [[nodiscard]] uint64_t Mounts() const;
  [[nodiscard]] DriveState StateOf(size_t drive) const;
  // What the drives and robots did so far (the timeline's input).
  [[nodiscard]] std::vector<Interval> Intervals() const;

  // Starts the kScaled driver thread (Create calls it).
  void StartScaledDriver();

 private:
  struct Request {
    RecallRequest request;
    std::function<void(const RecallCompletion&)> done;
    double submitted = 0;
    uint64_t blocks = 0;
    int drive = -1;             // serving drive, -1 while queued
    double service_start = -1;  // first time a drive started on it
    double first_byte = 0;
    bool write = false;  // SubmitWrite: the drive writes the extent instead of reading it
  };
  struct Cartridge {
    bool media_error = false;
    int drive = -1;          // the drive it is in, or reserved for; -1: slot or robot
    bool returning = false;  // the robot is taking it back to its slot
    bool fetch_in_flight = false;
    // Queued requests in arrival (id) order, with what the policies look at copied in, so a
    // dispatch reads the queue without a lookup per request (1 M queued requests: bench/tape).
    std::vector<QueuedRequest> queue;
    uint64_t queued_bytes = 0;
  };
  using Callback = std::pair<std::function<void(const RecallCompletion&)>, RecallCompletion>;

  // Submit and SubmitWrite: queue on the extent's cartridge (or fail as an event).
  uint64_t Enqueue(RecallRequest request, std::function<void(const RecallCompletion&)> done,
                   bool write);
  double NowLocked() const REQUIRES(mu_);
  void RunReadyCallbacks(MutexLock& lock) REQUIRES(mu_);
  void ScaledLoop();

  void SetStateLocked(size_t d, DriveState state) REQUIRES(mu_);
  void RequestDispatchLocked() REQUIRES(mu_);
  void DispatchLocked() REQUIRES(mu_);
  void DispatchFifoLocked() REQUIRES(mu_);
  void DispatchBatchLocked() REQUIRES(mu_);
  int PickDriveForMountLocked() REQUIRES(mu_);
  bool PreemptForLocked(const std::string& cartridge, double oldest_submitted) REQUIRES(mu_);
  void SchedulePokeLocked(double at) REQUIRES(mu_);
  void MountOnLocked(size_t d, const std::string& cartridge) REQUIRES(mu_);
  void StartFetchLocked(size_t d) REQUIRES(mu_);
  void OnFetchedLocked(size_t d, uint64_t generation, const std::string& cartridge) REQUIRES(mu_);
  void LoadIncomingLocked(size_t d) REQUIRES(mu_);  // drive empty, incoming at hand: load it
  void OnLoadedLocked(size_t d) REQUIRES(mu_);
  void ServeLocked(size_t d, uint64_t id) REQUIRES(mu_);
  void OnLocatedLocked(size_t d) REQUIRES(mu_);
  void OnReadLocked(size_t d) REQUIRES(mu_);  // end of a read or a write
  void AfterServeLocked(size_t d) REQUIRES(mu_);
  void StartUnloadLocked(size_t d) REQUIRES(mu_);
  void OnRewoundLocked(size_t d) REQUIRES(mu_);
  void OnUnloadedLocked(size_t d) REQUIRES(mu_);
  void PutAwayLocked(const std::string& cartridge) REQUIRES(mu_);
  void DriveDownLocked(size_t d) REQUIRES(mu_);
  void RequeueLocked(uint64_t id) REQUIRES(mu_);
  void CompleteLocked(uint64_t id, RecallOutcome outcome, std::string detail) REQUIRES(mu_);
  // Runs `action` after `delay_s` unless drive `d` went down or up in between.
  void AfterForDriveLocked(size_t d, double delay_s, void (LibraryImpl::*action)(size_t))
      REQUIRES(mu_);

  const LibraryConfig config_;
  const Geometry geometry_;
  const LocateModel locate_;
  const Policy policy_;

  mutable Mutex mu_;
  CondVar wake_;  // scaled driver: a new event or stop
  EventQueue events_ GUARDED_BY(mu_);
  Metrics metrics_ GUARDED_BY(mu_);
  RobotPool robots_ GUARDED_BY(mu_);
  std::vector<Drive> drives_ GUARDED_BY(mu_);
  std::map<std::string, Cartridge, std::less<>> cartridges_ GUARDED_BY(mu_);
  std::map<uint64_t, Request> requests_ GUARDED_BY(mu_);  // outstanding, by id = arrival order
  std::vector<Callback> ready_ GUARDED_BY(mu_);
  std::mt19937_64 rng_ GUARDED_BY(mu_);
  double stage_fail_probability_ GUARDED_BY(mu_) = 0;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  bool dispatch_scheduled_ GUARDED_BY(mu_) = false;
  // The one scheduled re-dispatch for the mount criteria and max-age (batching policies).
  double poke_at_ GUARDED_BY(mu_) = std::numeric_limits<double>::infinity();
  std::optional<uint64_t> poke_id_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  Clock::TimePoint real_start_;
  std::thread driver_;  // last: joined in the destructor before members go away
};

}  // namespace reelfs::gateway::tape

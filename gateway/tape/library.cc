// LibraryImpl: the drive state machine, the dispatcher that assigns work to drives (with the
// policy's answers, policy.h) and the two time drivers (kDiscrete: RunUntilIdle; kScaled: a
// thread).
//
// Every transition is an event on events_ (simulated seconds). Drive events carry the drive's
// generation so that a drive that went DOWN ignores what was scheduled for it before.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "common/mutex.h"
#include "gateway/tape/internal/library_impl.h"
#include "gateway/tape/internal/timeline_svg.h"

namespace reelfs::gateway::tape {
namespace {

constexpr double kBytesPerGb = 1e9;  // decimal, like every published tape figure
constexpr size_t kMaxCartridgeName = 64;

// A drive serving a mounted cartridge, not yet promised to another one.
bool Preemptable(const Drive& drive) {
  const bool serving_state =
      drive.state == DriveState::kReady || drive.state == DriveState::kLocating ||
      drive.state == DriveState::kReading || drive.state == DriveState::kWriting;
  return serving_state && !drive.cartridge.empty() && drive.incoming.empty();
}

std::vector<std::string> DriveNames(uint32_t n) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) names.push_back(fmt::format("drive{}", i));
  return names;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Create(const LibraryConfig& config) {
  REELFS_RETURN_IF_ERROR(ValidateLibraryConfig(config));
  REELFS_ASSIGN_OR_RETURN(const Policy policy, FindPolicy(config.scheduler.policy));
  auto library = std::make_unique<LibraryImpl>(config, policy);
  if (config.mode == SimMode::kScaled) library->StartScaledDriver();
  return std::unique_ptr<Library>(std::move(library));
}

LibraryImpl::LibraryImpl(const LibraryConfig& config, const Policy& policy)
    : config_(config),
      geometry_(config.drive, config.block_bytes),
      locate_(geometry_, config.drive.locate_scale),
      policy_(policy),
      metrics_(DriveNames(config.drives), config.robots, config.scheduler.policy),
      robots_(config.robots, config.robot_move_s, &events_, &metrics_),
      rng_(config.seed),
      real_start_(RealClock().Now()) {
  for (const std::string& name : DriveNames(config.drives)) drives_.push_back(Drive{.name = name});
}

LibraryImpl::~LibraryImpl() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (driver_.joinable()) driver_.join();
  MutexLock lock(mu_);
  std::vector<uint64_t> ids;
  for (const auto& [id, r] : requests_) ids.push_back(id);
  for (uint64_t id : ids) CompleteLocked(id, RecallOutcome::kShutdown, "library shut down");
  RunReadyCallbacks(lock);
}

void LibraryImpl::StartScaledDriver() {
  driver_ = std::thread([this] { ScaledLoop(); });
}

// ---- time ------------------------------------------------------------------------------------

double LibraryImpl::NowLocked() const {
  if (config_.mode == SimMode::kDiscrete) return events_.now();
  const double real_s = std::chrono::duration<double>(RealClock().Now() - real_start_).count();
  double t = real_s * config_.speedup;
  // Never past an event the driver has not run yet: a Submit must not overtake the queue.
  if (!events_.Empty()) t = std::min(t, events_.NextTime());
  return std::max(t, events_.now());
}

SimDuration LibraryImpl::Now() const {
  MutexLock lock(mu_);
  return SimDuration(NowLocked());
}

// The analysis cannot tie `lock` to mu_ across the unlock/lock in the loop: the header's
// REQUIRES(mu_) checks the callers.
void LibraryImpl::RunReadyCallbacks(MutexLock& lock) NO_THREAD_SAFETY_ANALYSIS {
  while (!ready_.empty()) {
    std::vector<Callback> ready;
    ready.swap(ready_);
    lock.unlock();
    for (auto& [done, completion] : ready) {
      if (done) done(completion);
    }
    lock.lock();
  }
}

SimDuration LibraryImpl::RunUntilIdle() {
  MutexLock lock(mu_);
  if (config_.mode != SimMode::kDiscrete) return SimDuration(NowLocked());
  while (!events_.Empty()) {
    EventQueue::Action action = events_.PopNext();
    action();
    RunReadyCallbacks(lock);
  }
  return SimDuration(events_.now());
}

SimDuration LibraryImpl::RunUntil(SimDuration t) {
  MutexLock lock(mu_);
  if (config_.mode != SimMode::kDiscrete) return SimDuration(NowLocked());
  while (!events_.Empty() && events_.NextTime() <= t.count()) {
    EventQueue::Action action = events_.PopNext();
    action();
    RunReadyCallbacks(lock);
  }
  events_.AdvanceTo(t.count());
  return SimDuration(events_.now());
}

void LibraryImpl::ScaledLoop() {
  MutexLock lock(mu_);
  while (!stop_) {
    if (events_.Empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto deadline =
        real_start_ + std::chrono::duration_cast<Clock::Duration>(
                          std::chrono::duration<double>(events_.NextTime() / config_.speedup));
    if (RealClock().Now() < deadline) {
      // A Submit or Inject may schedule an earlier event: it notifies, and we recompute.
      wake_.wait_until(lock, deadline);
      continue;
    }
    EventQueue::Action action = events_.PopNext();
    action();
    RunReadyCallbacks(lock);
  }
}

// ---- facade ----------------------------------------------------------------------------------

Status LibraryImpl::AddCartridge(std::string_view cartridge) {
  if (cartridge.empty() || cartridge.size() > kMaxCartridgeName) {
    return Status::InvalidArgument(
        fmt::format("cartridge name must be 1..{} bytes", kMaxCartridgeName));
  }
  for (char c : cartridge) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
      return Status::InvalidArgument("cartridge name must be printable ASCII without spaces");
    }
  }
  MutexLock lock(mu_);
  cartridges_.try_emplace(std::string(cartridge));
  return Status::Ok();
}

uint64_t LibraryImpl::Submit(RecallRequest request,
                             std::function<void(const RecallCompletion&)> done) {
  return Enqueue(std::move(request), std::move(done), /*write=*/false);
}

uint64_t LibraryImpl::SubmitWrite(RecallRequest request,
                                  std::function<void(const RecallCompletion&)> done) {
  return Enqueue(std::move(request), std::move(done), /*write=*/true);
}

uint64_t LibraryImpl::Enqueue(RecallRequest request,
                              std::function<void(const RecallCompletion&)> done, bool write) {
  uint64_t id;
  {
    MutexLock lock(mu_);
    id = next_id_++;
    const double now = NowLocked();
    events_.AdvanceTo(now);
    if (write) {
      metrics_.WriteSubmitted();
    } else {
      metrics_.Submitted();
    }
    Request r{.request = std::move(request), .done = std::move(done), .submitted = now};
    r.write = write;
    r.blocks = geometry_.BlocksFor(r.request.extent.bytes);
    const Extent& extent = r.request.extent;
    std::string failure;
    auto it = cartridges_.find(extent.cartridge);
    if (it == cartridges_.end()) {
      failure = fmt::format("unknown cartridge '{}'", extent.cartridge);
    } else if (extent.start_block >= geometry_.CapacityBlocks() ||
               r.blocks > geometry_.CapacityBlocks() - extent.start_block) {
      failure = fmt::format("extent {}+{} blocks is past the cartridge's {} blocks",
                            extent.start_block, r.blocks, geometry_.CapacityBlocks());
    }
    const uint64_t bytes = extent.bytes;
    requests_.emplace(id, std::move(r));
    if (!failure.empty()) {
      // Completed as an event, so `done` never runs inside Submit (the caller may hold locks).
      events_.After(0, [this, id, failure]() REQUIRES(mu_) {
        CompleteLocked(id, RecallOutcome::kMediaError, failure);
      });
    } else {
      const Request& queued = requests_.at(id);
      it->second.queue.push_back({id, extent.start_block, queued.blocks, queued.submitted});
      it->second.queued_bytes += bytes;
      RequestDispatchLocked();
    }
  }
  wake_.notify_all();
  return id;
}

void LibraryImpl::Inject(const Fault& fault) {
  {
    MutexLock lock(mu_);
    events_.AdvanceTo(NowLocked());
    switch (fault.kind) {
      case Fault::Kind::kMediaError:
        cartridges_[fault.target].media_error = true;
        break;
      case Fault::Kind::kDriveDown:
      case Fault::Kind::kDriveUp:
        for (size_t d = 0; d < drives_.size(); ++d) {
          if (drives_[d].name != fault.target) continue;
          if (fault.kind == Fault::Kind::kDriveDown) {
            DriveDownLocked(d);
          } else if (drives_[d].state == DriveState::kDown) {
            ++drives_[d].generation;
            SetStateLocked(d, DriveState::kEmpty);
            RequestDispatchLocked();
          }
        }
        break;
      case Fault::Kind::kRobotStall:
        robots_.Stall(std::max(0.0, fault.duration.count()));
        break;
      case Fault::Kind::kStageFail:
        stage_fail_probability_ =
            std::isfinite(fault.probability) ? std::clamp(fault.probability, 0.0, 1.0) : 0.0;
        break;
    }
  }
  wake_.notify_all();
}

Json LibraryImpl::MetricsDocument() const {
  MutexLock lock(mu_);
  std::vector<uint64_t> open_mounts;
  for (const Drive& d : drives_) {
    if (!d.cartridge.empty() && d.state != DriveState::kLoading) {
      open_mounts.push_back(d.bytes_this_mount);
    }
  }
  return metrics_.ToJson(NowLocked(), open_mounts);
}

std::string LibraryImpl::TimelineSvg() const {
  std::vector<Interval> intervals;
  std::vector<std::string> lanes;
  double now;
  size_t dropped;
  {
    MutexLock lock(mu_);
    now = NowLocked();
    intervals = metrics_.Intervals(now);
    dropped = metrics_.dropped_intervals();
    lanes = metrics_.drive_names();
    for (uint32_t r = 0; r < metrics_.robots(); ++r) lanes.push_back(fmt::format("robot{}", r));
  }
  return RenderTimelineSvg(lanes, intervals, now, dropped);
}

double LibraryImpl::TotalSeconds(Activity activity) const {
  MutexLock lock(mu_);
  return metrics_.TotalSeconds(activity, NowLocked());
}

uint64_t LibraryImpl::Mounts() const {
  MutexLock lock(mu_);
  return metrics_.mounts();
}

std::vector<Interval> LibraryImpl::Intervals() const {
  MutexLock lock(mu_);
  return metrics_.Intervals(NowLocked());
}

DriveState LibraryImpl::StateOf(size_t drive) const {
  MutexLock lock(mu_);
  return drives_.at(drive).state;
}

// ---- dispatcher ------------------------------------------------------------------------------

void LibraryImpl::RequestDispatchLocked() {
  // Coalesced into one event at the current time, so a burst of Submits is seen as one batch and
  // decisions never depend on the order of calls within one instant.
  if (dispatch_scheduled_) return;
  dispatch_scheduled_ = true;
  events_.After(0, [this]() REQUIRES(mu_) {
    dispatch_scheduled_ = false;
    DispatchLocked();
  });
}

void LibraryImpl::DispatchLocked() {
  if (policy_.batches) {
    DispatchBatchLocked();
  } else {
    DispatchFifoLocked();
  }
}

// Idle drives can take a mount: an EMPTY unreserved drive first (lowest index), else the mounted
// drive idle the longest whose cartridge has no queued work (fifo: whatever it holds).
int LibraryImpl::PickDriveForMountLocked() {
  for (size_t d = 0; d < drives_.size(); ++d) {
    if (drives_[d].state == DriveState::kEmpty && drives_[d].incoming.empty()) {
      return static_cast<int>(d);
    }
  }
  int best = -1;
  std::pair<bool, double> best_key{true, 0};
  for (size_t d = 0; d < drives_.size(); ++d) {
    const Drive& drive = drives_[d];
    if (drive.state != DriveState::kReady || drive.serving || !drive.incoming.empty()) continue;
    const bool has_work = !cartridges_[drive.cartridge].queue.empty();
    if (has_work && policy_.batches) continue;  // it serves its own queue
    const std::pair<bool, double> key{has_work, drive.idle_since};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(d);
      best_key = key;
    }
  }
  return best;
}

void LibraryImpl::DispatchFifoLocked() {
  // Only the head of each cartridge's queue can be served or mounted next (a cartridge serves
  // its requests in arrival order), so the candidates are those heads, oldest first: one per
  // cartridge, not one per queued request. A snapshot: serving can complete a request (media
  // error) and erase it from requests_.
  std::vector<uint64_t> queued;
  for (const auto& [name, c] : cartridges_) {
    if (!c.queue.empty()) queued.push_back(c.queue.front().id);
  }
  std::sort(queued.begin(), queued.end());
  for (uint64_t id : queued) {
    auto rit = requests_.find(id);
    if (rit == requests_.end() || rit->second.drive >= 0) continue;
    auto it = cartridges_.find(rit->second.request.extent.cartridge);
    if (it == cartridges_.end()) continue;  // failing as an event already
    Cartridge& c = it->second;
    if (c.queue.empty() || c.queue.front().id != id) continue;  // served meanwhile
    if (c.drive >= 0) {
      Drive& drive = drives_[c.drive];
      if (drive.state == DriveState::kReady && !drive.serving && drive.cartridge == it->first &&
          drive.incoming.empty()) {
        ServeLocked(c.drive, id);
      }
      continue;  // otherwise it waits for the drive that holds (or fetches) its cartridge
    }
    if (c.returning) continue;  // back in its slot in a moment; the put-away re-dispatches
    const int d = PickDriveForMountLocked();
    if (d < 0) break;  // strict arrival order: younger requests do not overtake this one
    MountOnLocked(d, it->first);
  }
}

void LibraryImpl::DispatchBatchLocked() {
  const double now = events_.now();
  const double max_age = config_.scheduler.max_age_s;
  // Cartridges in their slots with queued work, oldest request first.
  struct Waiting {
    uint64_t oldest_id;
    double submitted;  // of the oldest request
    const std::string* name;
    const Cartridge* cartridge;
  };
  std::vector<Waiting> waiting;
  for (const auto& [name, c] : cartridges_) {
    if (c.drive < 0 && !c.returning && !c.queue.empty()) {
      waiting.push_back({c.queue.front().id, c.queue.front().submitted, &name, &c});
    }
  }
  std::sort(waiting.begin(), waiting.end(),
            [](const Waiting& a, const Waiting& b) { return a.oldest_id < b.oldest_id; });
  // The starvation barrier: when a cartridge has waited max_age_s for a drive, mounted drives
  // stop taking requests younger than its oldest one. They finish what is older, then one of them
  // is handed over (PreemptForLocked). Without an overdue cartridge a mount serves its whole
  // queue, late arrivals included.
  double barrier = std::numeric_limits<double>::infinity();
  if (!waiting.empty()) {
    const double oldest = waiting.front().submitted;
    if (now - oldest >= max_age) barrier = oldest;
  }

  // 1. Mounted idle drives serve their own cartridge's queue, in the policy's order.
  for (size_t d = 0; d < drives_.size(); ++d) {
    Drive& drive = drives_[d];
    if (drive.state != DriveState::kReady || drive.serving || drive.cartridge.empty()) continue;
    if (!drive.incoming.empty()) {
      StartUnloadLocked(d);
      continue;
    }
    const std::vector<QueuedRequest>& all = cartridges_[drive.cartridge].queue;
    // Arrival order: the requests at or before the barrier are a prefix.
    const auto eligible = std::span<const QueuedRequest>(
        all.begin(), std::partition_point(all.begin(), all.end(), [&](const QueuedRequest& q) {
          return q.submitted <= barrier;
        }));
    if (eligible.empty()) continue;
    ServeLocked(d, eligible[policy_.pick_next(eligible, drive.head_block, locate_)].id);
  }

  // 2. Waiting cartridges that meet the mount criteria get free drives, oldest request first.
  double next_poke = std::numeric_limits<double>::infinity();
  bool no_drive = false;
  for (const Waiting& w : waiting) {
    const Cartridge& c = *w.cartridge;
    const std::string* name = w.name;
    const double submitted = w.submitted;
    const double age = now - submitted;
    if (!MountEligible(config_.scheduler, c.queue.size(), c.queued_bytes, age)) {
      next_poke = std::min(next_poke, submitted + max_age);
      continue;
    }
    if (no_drive) continue;
    if (const int d = PickDriveForMountLocked(); d >= 0) {
      MountOnLocked(d, *name);
      continue;
    }
    if (age >= max_age && PreemptForLocked(*name, submitted)) continue;
    // Every drive is busy with older work. Drives dispatch again after each read; the poke covers
    // the moment this cartridge becomes overdue.
    no_drive = true;
    // Becoming overdue only matters if there is a mounted drive to hand over; any other drive
    // dispatches again when its state changes.
    const bool any_mounted = std::any_of(drives_.begin(), drives_.end(), Preemptable);
    if (age < max_age && any_mounted) next_poke = std::min(next_poke, submitted + max_age);
  }
  SchedulePokeLocked(next_poke);
}

bool LibraryImpl::PreemptForLocked(const std::string& cartridge, double oldest_submitted) {
  int best = -1;
  for (size_t d = 0; d < drives_.size(); ++d) {
    const Drive& drive = drives_[d];
    if (!Preemptable(drive)) continue;
    const std::vector<QueuedRequest>& queue = cartridges_[drive.cartridge].queue;
    // Arrival order: the front is the oldest.
    if (!queue.empty() && queue.front().submitted <= oldest_submitted) continue;
    // An idle drive first, then the one mounted longest.
    if (best < 0 || std::pair(drive.serving.has_value(), drive.mounted_at) <
                        std::pair(drives_[best].serving.has_value(), drives_[best].mounted_at)) {
      best = static_cast<int>(d);
    }
  }
  if (best < 0) return false;
  Drive& drive = drives_[best];
  drive.incoming = cartridge;
  cartridges_[cartridge].drive = best;
  if (!drive.serving) {
    StartUnloadLocked(best);
  } else {
    drive.release_after_read = true;
  }
  return true;
}

void LibraryImpl::SchedulePokeLocked(double at) {
  // One poke at a time, always the one the latest dispatch asked for (infinity: none).
  if (at == poke_at_) return;
  if (poke_id_) events_.Cancel(*poke_id_);
  poke_id_.reset();
  poke_at_ = at;
  if (!std::isfinite(at)) return;
  poke_id_ = events_.Schedule(at, [this]() REQUIRES(mu_) {
    poke_id_.reset();
    poke_at_ = std::numeric_limits<double>::infinity();
    DispatchLocked();
  });
}

// ---- drive state machine ---------------------------------------------------------------------

void LibraryImpl::SetStateLocked(size_t d, DriveState state) {
  Drive& drive = drives_[d];
  drive.state = state;
  drive.state_since = events_.now();
  metrics_.DriveEntered(d, state, events_.now(), drive.cartridge);
}

void LibraryImpl::AfterForDriveLocked(size_t d, double delay_s,
                                      void (LibraryImpl::*action)(size_t)) {
  events_.After(delay_s, [this, d, action, generation = drives_[d].generation]() REQUIRES(mu_) {
    if (drives_[d].generation != generation) return;  // the drive went down meanwhile
    (this->*action)(d);
  });
}

void LibraryImpl::MountOnLocked(size_t d, const std::string& cartridge) {
  Drive& drive = drives_[d];
  drive.incoming = cartridge;
  cartridges_[cartridge].drive = static_cast<int>(d);
  if (drive.state == DriveState::kEmpty) {
    StartFetchLocked(d);
  } else {
    StartUnloadLocked(d);  // the fetch follows the put-away (OnUnloadedLocked)
  }
}

void LibraryImpl::StartFetchLocked(size_t d) {
  Drive& drive = drives_[d];
  const std::string cartridge = drive.incoming;
  cartridges_[cartridge].fetch_in_flight = true;
  robots_.Enqueue(
      RobotPool::Move{.cartridge = cartridge,
                      .drive = drive.name,
                      .fetch = true,
                      .done = [this, d, generation = drive.generation, cartridge]()
                                  REQUIRES(mu_) { OnFetchedLocked(d, generation, cartridge); }});
}

void LibraryImpl::OnFetchedLocked(size_t d, uint64_t generation, const std::string& cartridge) {
  Cartridge& c = cartridges_[cartridge];
  c.fetch_in_flight = false;
  Drive& drive = drives_[d];
  if (drive.generation != generation) {
    // The drive went down while the robot carried the cartridge: take it back.
    PutAwayLocked(cartridge);
    return;
  }
  if (drive.state != DriveState::kEmpty) {
    drive.incoming_here = true;  // fetched ahead: waits for the unload (OnUnloadedLocked)
    return;
  }
  LoadIncomingLocked(d);
}

void LibraryImpl::LoadIncomingLocked(size_t d) {
  Drive& drive = drives_[d];
  const std::string cartridge = std::move(drive.incoming);
  drive.incoming_here = false;
  drive.cartridge = cartridge;
  drive.incoming.clear();
  SetStateLocked(d, DriveState::kLoading);
  AfterForDriveLocked(d, config_.drive.load_s, &LibraryImpl::OnLoadedLocked);
}

void LibraryImpl::OnLoadedLocked(size_t d) {
  Drive& drive = drives_[d];
  drive.head_block = 0;  // load point: BOT, wrap 0
  drive.bytes_this_mount = 0;
  drive.mounted_at = drive.idle_since = events_.now();
  metrics_.Mounted(drive.cartridge);
  SetStateLocked(d, DriveState::kReady);
  RequestDispatchLocked();
}

void LibraryImpl::ServeLocked(size_t d, uint64_t id) {
  Drive& drive = drives_[d];
  Request& r = requests_.at(id);
  Cartridge& c = cartridges_[drive.cartridge];
  std::erase_if(c.queue, [id](const QueuedRequest& q) { return q.id == id; });
  c.queued_bytes -= r.request.extent.bytes;
  r.drive = static_cast<int>(d);
  if (r.service_start < 0) r.service_start = events_.now();
  drive.serving = id;
  const double locate_s = locate_.Seconds(drive.head_block, r.request.extent.start_block);
  if (locate_s <= 0) {
    OnLocatedLocked(d);  // streaming on: the extent starts under the head
    return;
  }
  SetStateLocked(d, DriveState::kLocating);
  AfterForDriveLocked(d, locate_s, &LibraryImpl::OnLocatedLocked);
}

void LibraryImpl::OnLocatedLocked(size_t d) {
  Drive& drive = drives_[d];
  Request& r = requests_.at(*drive.serving);
  drive.head_block = r.request.extent.start_block;
  if (cartridges_[drive.cartridge].media_error) {
    r.first_byte = events_.now();
    const uint64_t id = *drive.serving;
    drive.serving.reset();
    CompleteLocked(id, RecallOutcome::kMediaError,
                   fmt::format("media error on cartridge {}", drive.cartridge));
    SetStateLocked(d, DriveState::kReady);
    drive.idle_since = events_.now();
    AfterServeLocked(d);
    return;
  }
  r.first_byte = events_.now();
  // A write streams from the end of data (where the extent starts) at the same native rate.
  SetStateLocked(d, r.write ? DriveState::kWriting : DriveState::kReading);
  const double read_s =
      static_cast<double>(r.request.extent.bytes) / (config_.drive.rate_mb_s * 1e6);
  AfterForDriveLocked(d, read_s, &LibraryImpl::OnReadLocked);
}

void LibraryImpl::OnReadLocked(size_t d) {
  Drive& drive = drives_[d];
  const uint64_t id = *drive.serving;
  const Request& r = requests_.at(id);
  drive.head_block = r.request.extent.start_block + r.blocks;
  drive.bytes_this_mount += r.request.extent.bytes;
  drive.serving.reset();
  // Drawn for every read while the fault is set (and only then), so runs without the fault are
  // unaffected by the generator.
  if (!r.write && stage_fail_probability_ > 0 &&
      std::uniform_real_distribution<double>(0, 1)(rng_) < stage_fail_probability_) {
    CompleteLocked(id, RecallOutcome::kStageFail, "injected stage failure");
  } else {
    CompleteLocked(id, RecallOutcome::kOk, "");
  }
  SetStateLocked(d, DriveState::kReady);
  drive.idle_since = events_.now();
  AfterServeLocked(d);
}

void LibraryImpl::AfterServeLocked(size_t d) {
  Drive& drive = drives_[d];
  if (drive.release_after_read || !drive.incoming.empty()) {
    drive.release_after_read = false;
    StartUnloadLocked(d);
    return;
  }
  RequestDispatchLocked();
}

void LibraryImpl::StartUnloadLocked(size_t d) {
  Drive& drive = drives_[d];
  const double gb = static_cast<double>(drive.bytes_this_mount) / kBytesPerGb;
  const DriveParams& p = config_.drive;
  // "Archive mode unthread": the rewind inside unload depends on how much the mount moved.
  const double rewind_s = gb < p.rewind_small_gb    ? p.rewind_small_s
                          : gb < p.rewind_medium_gb ? p.rewind_medium_s
                                                    : p.rewind_large_s;
  SetStateLocked(d, DriveState::kRewinding);
  AfterForDriveLocked(d, rewind_s, &LibraryImpl::OnRewoundLocked);
  // The next cartridge is fetched while this one rewinds and unloads (tens of seconds), as real
  // libraries do, instead of after the put-away: the exchange then costs the drive no robot time.
  if (!drive.incoming.empty() && !cartridges_[drive.incoming].fetch_in_flight) {
    StartFetchLocked(d);
  }
}

void LibraryImpl::OnRewoundLocked(size_t d) {
  SetStateLocked(d, DriveState::kUnloading);
  AfterForDriveLocked(d, config_.drive.unload_s, &LibraryImpl::OnUnloadedLocked);
}

void LibraryImpl::OnUnloadedLocked(size_t d) {
  Drive& drive = drives_[d];
  metrics_.MountEnded(drive.bytes_this_mount);
  const std::string cartridge = std::move(drive.cartridge);
  drive.cartridge.clear();
  drive.bytes_this_mount = 0;
  SetStateLocked(d, DriveState::kEmpty);
  PutAwayLocked(cartridge);
  if (drive.incoming.empty()) {
    RequestDispatchLocked();
  } else if (drive.incoming_here) {
    LoadIncomingLocked(d);  // fetched during the rewind: no robot wait between the two mounts
  } else if (!cartridges_[drive.incoming].fetch_in_flight) {
    StartFetchLocked(d);  // reserved after the unload began: fetched now, after the put-away
  }                       // else: on its way; OnFetchedLocked loads it
}

void LibraryImpl::PutAwayLocked(const std::string& cartridge) {
  Cartridge& c = cartridges_[cartridge];
  c.drive = -1;
  c.returning = true;
  robots_.Enqueue(RobotPool::Move{.cartridge = cartridge,
                                  .drive = "",
                                  .fetch = false,
                                  .done = [this, cartridge]() REQUIRES(mu_) {
                                    cartridges_[cartridge].returning = false;
                                    RequestDispatchLocked();
                                  }});
}

void LibraryImpl::DriveDownLocked(size_t d) {
  Drive& drive = drives_[d];
  if (drive.state == DriveState::kDown) return;
  ++drive.generation;  // cancels every event scheduled for this drive
  if (drive.serving) {
    RequeueLocked(*drive.serving);
    drive.serving.reset();
  }
  drive.release_after_read = false;
  if (!drive.incoming.empty()) {
    // Reserved but not here yet: if the robot already carries it, OnFetchedLocked sees the new
    // generation and sends it back; otherwise it is simply free again.
    Cartridge& in = cartridges_[drive.incoming];
    in.drive = -1;
    if (in.fetch_in_flight) in.returning = true;
    if (drive.incoming_here) PutAwayLocked(drive.incoming);  // fetched ahead, waiting here
    drive.incoming_here = false;
    drive.incoming.clear();
  }
  if (!drive.cartridge.empty()) {
    // The library's recovery: the robot pulls the cartridge out of the failed drive.
    if (drive.state != DriveState::kLoading) metrics_.MountEnded(drive.bytes_this_mount);
    const std::string cartridge = std::move(drive.cartridge);
    drive.cartridge.clear();
    PutAwayLocked(cartridge);
  }
  drive.bytes_this_mount = 0;
  SetStateLocked(d, DriveState::kDown);
  RequestDispatchLocked();
}

void LibraryImpl::RequeueLocked(uint64_t id) {
  Request& r = requests_.at(id);
  r.drive = -1;
  Cartridge& c = cartridges_[r.request.extent.cartridge];
  // Back in its place by arrival order, so fifo and max-age still see it as old as it is.
  c.queue.insert(std::lower_bound(c.queue.begin(), c.queue.end(), id,
                                  [](const QueuedRequest& q, uint64_t v) { return q.id < v; }),
                 QueuedRequest{id, r.request.extent.start_block, r.blocks, r.submitted});
  c.queued_bytes += r.request.extent.bytes;
  metrics_.Requeued();
}

void LibraryImpl::CompleteLocked(uint64_t id, RecallOutcome outcome, std::string detail) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  Request& r = it->second;
  RecallCompletion c;
  c.id = id;
  c.outcome = outcome;
  c.detail = std::move(detail);
  c.submitted = SimDuration(r.submitted);
  c.done = SimDuration(events_.now());
  c.first_byte = SimDuration(r.service_start >= 0 ? r.first_byte : events_.now());
  if (r.drive >= 0) c.drive = drives_[r.drive].name;
  if (outcome == RecallOutcome::kShutdown) {
    // Still queued somewhere: take it out so nothing refers to a finished request.
    if (auto cit = cartridges_.find(r.request.extent.cartridge); cit != cartridges_.end()) {
      std::erase_if(cit->second.queue, [id](const QueuedRequest& q) { return q.id == id; });
    }
  }
  if (r.write) {
    metrics_.WriteCompleted(c, r.request.extent.bytes);
  } else {
    metrics_.Completed(c, r.request.extent.bytes, r.service_start);
  }
  ready_.emplace_back(std::move(r.done), std::move(c));
  requests_.erase(it);
}

}  // namespace reelfs::gateway::tape

#include "gateway/tape/internal/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/json.h"

namespace reelfs::gateway::tape {
namespace {

constexpr Activity kAllActivities[] = {
    Activity::kLoading,   Activity::kLocating,   Activity::kReading,
    Activity::kRewinding, Activity::kUnloading,  Activity::kDown,
    Activity::kRobotMove, Activity::kRobotStall, Activity::kWriting};

// count, mean, p50, p95, max of `samples` (nearest rank), as a JSON object.
Json Distribution(std::vector<double> samples) {
  if (samples.empty()) return Json{{"count", 0}, {"mean", 0}, {"p50", 0}, {"p95", 0}, {"max", 0}};
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
    return samples[std::clamp<size_t>(i, 1, samples.size()) - 1];
  };
  const double mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return Json{{"count", samples.size()},
              {"mean", JsonNumber(mean)},
              {"p50", JsonNumber(rank(0.5))},
              {"p95", JsonNumber(rank(0.95))},
              {"max", JsonNumber(samples.back())}};
}

}  // namespace

bool ActivityOf(DriveState state, Activity* activity) {
  switch (state) {
    case DriveState::kLoading:
      *activity = Activity::kLoading;
      return true;
    case DriveState::kLocating:
      *activity = Activity::kLocating;
      return true;
    case DriveState::kReading:
      *activity = Activity::kReading;
      return true;
    case DriveState::kWriting:
      *activity = Activity::kWriting;
      return true;
    case DriveState::kRewinding:
      *activity = Activity::kRewinding;
      return true;
    case DriveState::kUnloading:
      *activity = Activity::kUnloading;
      return true;
    case DriveState::kDown:
      *activity = Activity::kDown;
      return true;
    case DriveState::kEmpty:
    case DriveState::kReady:
      return false;
  }
  return false;
}

std::string_view ActivityName(Activity activity) {
  switch (activity) {
    case Activity::kLoading:
      return "loading";
    case Activity::kLocating:
      return "locating";
    case Activity::kReading:
      return "reading";
    case Activity::kWriting:
      return "writing";
    case Activity::kRewinding:
      return "rewinding";
    case Activity::kUnloading:
      return "unloading";
    case Activity::kDown:
      return "down";
    case Activity::kRobotMove:
      return "robot_move";
    case Activity::kRobotStall:
      return "robot_stall";
  }
  return "unknown";
}

Metrics::Metrics(std::vector<std::string> drive_names, uint32_t robots, std::string policy)
    : drive_names_(std::move(drive_names)),
      robots_(robots),
      policy_(std::move(policy)),
      open_(drive_names_.size()),
      drive_busy_s_(drive_names_.size(), 0.0),
      robot_busy_until_(robots, 0.0) {}

void Metrics::AddInterval(Interval interval) {
  if (interval.end <= interval.start) return;
  if (intervals_.size() >= kMaxIntervals) {
    ++dropped_intervals_;
    return;
  }
  intervals_.push_back(std::move(interval));
}

void Metrics::DriveEntered(size_t drive, DriveState state, double now,
                           const std::string& cartridge) {
  OpenState& open = open_[drive];
  const double length = now - open.since;
  if (Busy(open.state)) drive_busy_s_[drive] += length;
  if (Activity a; ActivityOf(open.state, &a)) {
    activity_s_[a] += length;
    AddInterval(Interval{static_cast<uint32_t>(drive), a, open.since, now, open.cartridge});
  }
  open = OpenState{state, now, cartridge};
}

void Metrics::RobotMove(size_t robot, double start, double end, const std::string& cartridge,
                        const std::string& drive, bool fetch) {
  ++robot_moves_;
  robot_move_s_ += end - start;
  robot_busy_until_[robot] = end;
  // Fetches are labelled with the cartridge; put-aways too, with a trailing arrow for direction.
  (void)drive;
  AddInterval(Interval{static_cast<uint32_t>(drive_names_.size() + robot), Activity::kRobotMove,
                       start, end, fetch ? cartridge : cartridge + " \u2190"});
}

void Metrics::RobotStall(double start, double end) {
  activity_s_[Activity::kRobotStall] += end - start;
  for (uint32_t r = 0; r < robots_; ++r) {
    AddInterval(Interval{static_cast<uint32_t>(drive_names_.size() + r), Activity::kRobotStall,
                         start, end, "stall"});
  }
}

void Metrics::Mounted(const std::string& cartridge) {
  ++mounts_total_;
  ++mounts_per_cartridge_[cartridge];
}

void Metrics::MountEnded(uint64_t bytes) { bytes_per_mount_.push_back(bytes); }

void Metrics::Completed(const RecallCompletion& c, uint64_t bytes, double service_start) {
  switch (c.outcome) {
    case RecallOutcome::kOk:
      ++ok_;
      bytes_ok_ += bytes;
      break;
    case RecallOutcome::kMediaError:
      ++media_error_;
      break;
    case RecallOutcome::kStageFail:
      ++stage_fail_;
      break;
    case RecallOutcome::kShutdown:
      ++shutdown_;
      return;  // not a measurement of the library
  }
  if (service_start >= 0) queue_wait_s_.push_back(service_start - c.submitted.count());
  completion_s_.push_back((c.done - c.submitted).count());
  if (c.outcome == RecallOutcome::kOk)
    first_byte_s_.push_back((c.first_byte - c.submitted).count());
}

void Metrics::WriteCompleted(const RecallCompletion& c, uint64_t bytes) {
  switch (c.outcome) {
    case RecallOutcome::kOk:
      ++writes_ok_;
      bytes_written_ += bytes;
      write_completion_s_.push_back((c.done - c.submitted).count());
      break;
    case RecallOutcome::kShutdown:
      ++writes_shutdown_;
      break;
    case RecallOutcome::kMediaError:
    case RecallOutcome::kStageFail:
      ++writes_failed_;
      break;
  }
}

double Metrics::TotalSeconds(Activity activity, double now) const {
  double total = 0;
  if (auto it = activity_s_.find(activity); it != activity_s_.end()) total = it->second;
  if (activity == Activity::kRobotMove) {
    total = robot_move_s_;
    for (double until : robot_busy_until_) total -= std::max(0.0, until - now);
    return total;
  }
  for (const OpenState& open : open_) {
    if (Activity a; ActivityOf(open.state, &a) && a == activity) total += now - open.since;
  }
  return total;
}

std::vector<Interval> Metrics::Intervals(double now) const {
  std::vector<Interval> out = intervals_;
  for (size_t d = 0; d < open_.size(); ++d) {
    if (Activity a; ActivityOf(open_[d].state, &a) && now > open_[d].since) {
      out.push_back(Interval{static_cast<uint32_t>(d), a, open_[d].since, now, open_[d].cartridge});
    }
  }
  // Robot moves are recorded with their planned end; clip the ones still under way.
  for (Interval& i : out) i.end = std::min(i.end, std::max(now, i.start));
  return out;
}

Json Metrics::ToJson(double now, const std::vector<uint64_t>& open_mount_bytes) const {
  Json out;
  out["now_s"] = JsonNumber(now);
  out["policy"] = policy_;
  out["drives"] = drive_names_.size();
  out["robots"] = robots_;
  const uint64_t completed = ok_ + media_error_ + stage_fail_ + shutdown_;
  out["requests"] = Json{{"submitted", submitted_},
                         {"completed", completed},
                         {"pending", submitted_ - completed},
                         {"requeued", requeued_},
                         {"ok", ok_},
                         {"media_error", media_error_},
                         {"stage_fail", stage_fail_},
                         {"shutdown", shutdown_}};
  out["bytes_read"] = bytes_ok_;
  out["writes"] =
      Json{{"submitted", writes_submitted_},
           {"ok", writes_ok_},
           {"failed", writes_failed_},
           {"shutdown", writes_shutdown_},
           {"pending", writes_submitted_ - writes_ok_ - writes_failed_ - writes_shutdown_},
           {"completion_s", Distribution(write_completion_s_)}};
  out["bytes_written"] = bytes_written_;

  Json per_cartridge = Json::object();
  for (const auto& [cartridge, n] : mounts_per_cartridge_) per_cartridge[cartridge] = n;
  out["mounts"] = Json{{"total", mounts_total_}, {"per_cartridge", std::move(per_cartridge)}};
  std::vector<double> per_mount(bytes_per_mount_.begin(), bytes_per_mount_.end());
  for (uint64_t b : open_mount_bytes) per_mount.push_back(static_cast<double>(b));
  out["bytes_per_mount"] = Distribution(std::move(per_mount));

  Json drive_time = Json::object();
  double busy_total = 0;
  for (Activity a : kAllActivities) {
    if (a == Activity::kRobotMove || a == Activity::kRobotStall) continue;
    const double s = TotalSeconds(a, now);
    if (a != Activity::kDown) busy_total += s;
    drive_time[std::string(ActivityName(a))] = JsonNumber(s);
  }
  out["drive_time_s"] = std::move(drive_time);
  const double locating = TotalSeconds(Activity::kLocating, now);
  out["locate_share"] = JsonNumber(busy_total > 0 ? locating / busy_total : 0);

  Json utilization = Json::object();
  for (size_t d = 0; d < drive_names_.size(); ++d) {
    double busy = drive_busy_s_[d];
    if (Busy(open_[d].state)) busy += now - open_[d].since;
    utilization[drive_names_[d]] = JsonNumber(now > 0 ? busy / now : 0);
  }
  out["drive_utilization"] = std::move(utilization);
  const double moving = TotalSeconds(Activity::kRobotMove, now);
  out["robot_moves"] = robot_moves_;
  out["robot_utilization"] = JsonNumber(now > 0 ? moving / (now * robots_) : 0);
  out["robot_stall_s"] = JsonNumber(TotalSeconds(Activity::kRobotStall, now));
  out["queue_wait_s"] = Distribution(queue_wait_s_);
  out["completion_s"] = Distribution(completion_s_);
  out["time_to_first_byte_s"] = Distribution(first_byte_s_);
  out["timeline_intervals_dropped"] = dropped_intervals_;
  return out;
}

}  // namespace reelfs::gateway::tape

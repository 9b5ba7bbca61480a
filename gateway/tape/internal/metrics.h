// Metrics: what the simulated library did, recorded as it happens: drive state intervals, robot
// moves, mounts, per-request waits and completion times. MetricsJson renders the counters
// (docs/protocols/admin.md, "tape metrics"); TimelineSvg renders the intervals.
//
// Totals are kept incrementally; the interval list for the timeline is capped (kMaxIntervals) so a
// long-running gateway does not grow without bound, and the cap is reported.
//
// Thread-safety: none; used under the library's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "gateway/tape/internal/drive.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway::tape {

// What a lane was doing during an interval (the timeline's colors).
enum class Activity : uint8_t {
  kLoading,
  kLocating,
  kReading,
  kRewinding,
  kUnloading,
  kDown,
  kWriting,  // after the others: the existing order of the JSON and the legend stays
  kRobotMove,
  kRobotStall,
};

struct Interval {
  uint32_t lane;  // drives first (0..drives-1), then robots
  Activity activity;
  double start;
  double end;
  std::string label;  // cartridge
};

class Metrics {
 public:
  static constexpr size_t kMaxIntervals = 200'000;

  Metrics(std::vector<std::string> drive_names, uint32_t robots, std::string policy);

  // A drive entered `state` at `now` (with `cartridge` in it, or "").
  void DriveEntered(size_t drive, DriveState state, double now, const std::string& cartridge);
  void RobotMove(size_t robot, double start, double end, const std::string& cartridge,
                 const std::string& drive, bool fetch);
  void RobotStall(double start, double end);
  void Mounted(const std::string& cartridge);
  // A mount ended (unload or drive down) after moving `bytes`.
  void MountEnded(uint64_t bytes);
  void Submitted() { ++submitted_; }
  // `service_start`: when a drive began locating for it (negative: never served).
  void Completed(const RecallCompletion& c, uint64_t bytes, double service_start);
  // Writes are counted apart from recalls (the recall distributions stay about recalls).
  void WriteSubmitted() { ++writes_submitted_; }
  void WriteCompleted(const RecallCompletion& c, uint64_t bytes);
  void Requeued() { ++requeued_; }

  // `now`: the simulated time to close open intervals at.
  [[nodiscard]] Json ToJson(double now, const std::vector<uint64_t>& open_mount_bytes) const;
  [[nodiscard]] std::vector<Interval> Intervals(double now) const;
  [[nodiscard]] size_t dropped_intervals() const { return dropped_intervals_; }
  [[nodiscard]] const std::vector<std::string>& drive_names() const { return drive_names_; }
  [[nodiscard]] uint32_t robots() const { return robots_; }

  // Totals, for tests and benchmarks.
  [[nodiscard]] double TotalSeconds(Activity activity, double now) const;
  [[nodiscard]] uint64_t mounts() const { return mounts_total_; }

 private:
  struct OpenState {
    DriveState state = DriveState::kEmpty;
    double since = 0;
    std::string cartridge;
  };
  void AddInterval(Interval interval);
  static bool Busy(DriveState s) {
    return s != DriveState::kEmpty && s != DriveState::kReady && s != DriveState::kDown;
  }

  std::vector<std::string> drive_names_;
  uint32_t robots_;
  std::string policy_;
  std::vector<OpenState> open_;
  std::vector<double> drive_busy_s_;       // per drive, closed intervals
  std::map<Activity, double> activity_s_;  // closed intervals, all drives / robots
  std::vector<Interval> intervals_;
  size_t dropped_intervals_ = 0;
  uint64_t robot_moves_ = 0;
  double robot_move_s_ = 0;               // summed over robots, including moves still under way
  std::vector<double> robot_busy_until_;  // at most one move per robot is under way
  std::map<std::string, uint64_t> mounts_per_cartridge_;
  uint64_t mounts_total_ = 0;
  std::vector<uint64_t> bytes_per_mount_;
  uint64_t submitted_ = 0, requeued_ = 0;
  uint64_t ok_ = 0, media_error_ = 0, stage_fail_ = 0, shutdown_ = 0;
  uint64_t bytes_ok_ = 0;
  uint64_t writes_submitted_ = 0, writes_ok_ = 0, writes_failed_ = 0, writes_shutdown_ = 0;
  uint64_t bytes_written_ = 0;
  std::vector<double> write_completion_s_;
  std::vector<double> queue_wait_s_, completion_s_, first_byte_s_;
};

// Activity for a drive state; false for states that are not drawn (empty, ready).
bool ActivityOf(DriveState state, Activity* activity);
std::string_view ActivityName(Activity activity);

}  // namespace reelfs::gateway::tape

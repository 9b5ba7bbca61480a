#include "gateway/tape/internal/robots.h"

#include <algorithm>

#include "gateway/tape/internal/metrics.h"

namespace reelfs::gateway::tape {

RobotPool::RobotPool(uint32_t robots, double move_s, EventQueue* events, Metrics* metrics)
    : move_s_(move_s), events_(events), metrics_(metrics), busy_(robots, false) {}

void RobotPool::Enqueue(Move move) {
  queue_.push_back(std::move(move));
  StartMoves();
}

void RobotPool::Stall(double duration_s) {
  const double now = events_->now();
  stalled_until_ = std::max(stalled_until_, now + duration_s);
  metrics_->RobotStall(now, stalled_until_);
}

void RobotPool::StartMoves() {
  const double now = events_->now();
  if (now < stalled_until_) {
    if (!queue_.empty() && !wake_scheduled_) {
      wake_scheduled_ = true;
      events_->Schedule(stalled_until_, [this] {
        wake_scheduled_ = false;
        StartMoves();
      });
    }
    return;
  }
  for (size_t r = 0; r < busy_.size() && !queue_.empty(); ++r) {
    if (busy_[r]) continue;
    Move move = std::move(queue_.front());
    queue_.pop_front();
    busy_[r] = true;
    metrics_->RobotMove(r, now, now + move_s_, move.cartridge, move.drive, move.fetch);
    events_->After(move_s_, [this, r, done = std::move(move.done)] {
      busy_[r] = false;
      done();
      StartMoves();
    });
  }
}

}  // namespace reelfs::gateway::tape

// RobotPool: N identical robots (accessors) serving one FIFO queue of cartridge moves, each taking
// robot_move_s. A move is either a fetch (slot -> drive) or a put-away (drive -> slot). A robot
// stall (fault) keeps every robot from *starting* a move until it ends; moves already under way
// finish normally (the arm holds its cartridge).
//
// Thread-safety: none; used under the library's mutex. Completion actions run as events.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "gateway/tape/internal/event_queue.h"

namespace reelfs::gateway::tape {

class Metrics;

class RobotPool {
 public:
  struct Move {
    std::string cartridge;
    std::string drive;
    bool fetch = true;           // false: put-away
    std::function<void()> done;  // runs (as an event) when the cartridge arrives
  };

  RobotPool(uint32_t robots, double move_s, EventQueue* events, Metrics* metrics);

  void Enqueue(Move move);
  void Stall(double duration_s);
  [[nodiscard]] size_t queued() const { return queue_.size(); }

 private:
  void StartMoves();

  double move_s_;
  EventQueue* events_;
  Metrics* metrics_;
  std::vector<bool> busy_;
  std::deque<Move> queue_;
  double stalled_until_ = 0;
  bool wake_scheduled_ = false;
};

}  // namespace reelfs::gateway::tape

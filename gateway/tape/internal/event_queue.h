// EventQueue: the discrete-event core of the simulator. Events are ordered by simulated time, then
// by the order they were scheduled, so two runs with the same inputs take the same path (no
// tie-break by pointer or hash).
//
// Thread-safety: none; the library calls it under its own mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

namespace reelfs::gateway::tape {

class EventQueue {
 public:
  using Action = std::function<void()>;

  // Runs `action` at simulated time `at` (seconds); a time in the past runs at now(). Returns an
  // id for Cancel.
  uint64_t Schedule(double at, Action action);
  uint64_t After(double delay_s, Action action) {
    return Schedule(now_ + delay_s, std::move(action));
  }
  // Drops a scheduled event that has not run (a stale timer must not keep the queue busy: an idle
  // library is one with no events). Unknown or past ids are ignored.
  void Cancel(uint64_t id);

  [[nodiscard]] bool Empty() const;
  [[nodiscard]] double NextTime() const;  // requires !Empty()
  // Removes the earliest event, advances now() to its time and returns its action.
  Action PopNext();

  [[nodiscard]] double now() const { return now_; }
  // The scaled driver moves time forward between events (a Submit at real time t); never back.
  void AdvanceTo(double t) {
    if (t > now_) now_ = t;
  }

 private:
  struct Event {
    double at;
    uint64_t seq;
    Action action;
  };
  // std::push_heap builds a max-heap: "greater" puts the earliest event on top.
  static bool Later(const Event& a, const Event& b) {
    return a.at > b.at || (a.at == b.at && a.seq > b.seq);
  }

  void DropCancelledTop() const;

  // Mutable for lazy deletion: dropping cancelled events off the top changes no observable state.
  mutable std::vector<Event> heap_;
  mutable std::unordered_set<uint64_t> cancelled_;
  uint64_t next_seq_ = 0;
  double now_ = 0;
};

}  // namespace reelfs::gateway::tape

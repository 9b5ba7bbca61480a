#include "gateway/tape/internal/event_queue.h"

#include <algorithm>
#include <cassert>

namespace reelfs::gateway::tape {

void EventQueue::Schedule(double at, Action action) {
  heap_.push_back(Event{std::max(at, now_), next_seq_++, std::move(action)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

double EventQueue::NextTime() const {
  assert(!heap_.empty());
  return heap_.front().at;
}

EventQueue::Action EventQueue::PopNext() {
  assert(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Event event = std::move(heap_.back());
  heap_.pop_back();
  now_ = std::max(now_, event.at);
  return std::move(event.action);
}

}  // namespace reelfs::gateway::tape

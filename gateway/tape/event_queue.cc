#include "gateway/tape/internal/event_queue.h"

#include <algorithm>
#include <cassert>

namespace reelfs::gateway::tape {

uint64_t EventQueue::Schedule(double at, Action action) {
  const uint64_t id = next_seq_++;
  heap_.push_back(Event{std::max(at, now_), id, std::move(action)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
  return id;
}

void EventQueue::Cancel(uint64_t id) {
  if (id < next_seq_) cancelled_.insert(id);
}

void EventQueue::DropCancelledTop() const {
  while (!heap_.empty()) {
    auto it = cancelled_.find(heap_.front().seq);
    if (it == cancelled_.end()) return;
    cancelled_.erase(it);
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }
}

bool EventQueue::Empty() const {
  DropCancelledTop();
  return heap_.empty();
}

double EventQueue::NextTime() const {
  DropCancelledTop();
  assert(!heap_.empty());
  return heap_.front().at;
}

EventQueue::Action EventQueue::PopNext() {
  DropCancelledTop();
  assert(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Event event = std::move(heap_.back());
  heap_.pop_back();
  now_ = std::max(now_, event.at);
  return std::move(event.action);
}

}  // namespace reelfs::gateway::tape

#include "rdmaio/wire/window_fence.h"

#include <string>

namespace reelfs::rdmaio::wire {

WindowFence::WindowFence(const Clock& clock, WindowFenceOptions options)
    : clock_(clock), options_(options) {}

WindowState WindowFence::EffectiveStateLocked(const Entry& entry) const {
  if (entry.state == WindowState::kQuarantined && options_.lease &&
      clock_.Now() - entry.quarantined_at >= *options_.lease) {
    return WindowState::kIdle;
  }
  return entry.state;
}

WindowFence::Entry* WindowFence::FindTicketLocked(const Ticket& ticket) {
  auto it = windows_.find(ticket.window);
  if (it == windows_.end() || it->second.epoch != ticket.epoch) return nullptr;
  return &it->second;
}

Result<WindowFence::Ticket> WindowFence::Begin(WindowId window, Clock::Duration timeout) {
  MutexLock lock(mutex_);
  Entry& entry = windows_[window];
  switch (EffectiveStateLocked(entry)) {
    case WindowState::kInFlight:
      return Status(StatusCode::kFailedPrecondition, StatusReason::kWindowBusy,
                    "window " + std::to_string(window) + " already has a request in flight");
    case WindowState::kQuarantined:
      return Status(StatusCode::kFailedPrecondition, StatusReason::kWindowQuarantined,
                    "window " + std::to_string(window) + " is quarantined until fenced");
    case WindowState::kIdle:
      break;
  }
  entry.state = WindowState::kInFlight;
  ++entry.epoch;
  entry.deadline = clock_.Now() + timeout;
  return Ticket{window, entry.epoch};
}

bool WindowFence::Finish(const Ticket& ticket, bool fence_needed) {
  MutexLock lock(mutex_);
  Entry* entry = FindTicketLocked(ticket);
  if (entry == nullptr || entry->state == WindowState::kIdle) return false;
  if (fence_needed) {
    // A quarantine keeps its original start, so a lease is not extended by a late answer.
    if (entry->state != WindowState::kQuarantined) entry->quarantined_at = clock_.Now();
    entry->state = WindowState::kQuarantined;
  } else {
    entry->state = WindowState::kIdle;  // the server is done with the window
  }
  return true;
}

bool WindowFence::Abandon(const Ticket& ticket) {
  MutexLock lock(mutex_);
  Entry* entry = FindTicketLocked(ticket);
  if (entry == nullptr || entry->state != WindowState::kInFlight) return false;
  entry->state = WindowState::kQuarantined;
  entry->quarantined_at = clock_.Now();
  return true;
}

std::vector<WindowFence::Ticket> WindowFence::CollectOverdue() {
  MutexLock lock(mutex_);
  const Clock::TimePoint now = clock_.Now();
  std::vector<Ticket> overdue;
  for (auto& [id, entry] : windows_) {
    if (entry.state == WindowState::kInFlight && now >= entry.deadline) {
      entry.state = WindowState::kQuarantined;
      entry.quarantined_at = now;
      overdue.push_back(Ticket{id, entry.epoch});
    }
  }
  return overdue;
}

Status WindowFence::MarkFenced(WindowId window) {
  MutexLock lock(mutex_);
  auto it = windows_.find(window);
  if (it == windows_.end()) return Status::Ok();
  if (it->second.state == WindowState::kInFlight) {
    return Status::FailedPrecondition("window " + std::to_string(window) +
                                      " has a request in flight; fence after it ends");
  }
  it->second.state = WindowState::kIdle;
  return Status::Ok();
}

WindowState WindowFence::state(WindowId window) const {
  MutexLock lock(mutex_);
  auto it = windows_.find(window);
  return it == windows_.end() ? WindowState::kIdle : EffectiveStateLocked(it->second);
}

std::vector<WindowFence::WindowId> WindowFence::Quarantined() const {
  MutexLock lock(mutex_);
  std::vector<WindowId> out;
  for (const auto& [id, entry] : windows_) {
    if (EffectiveStateLocked(entry) == WindowState::kQuarantined) out.push_back(id);
  }
  return out;
}

}  // namespace reelfs::rdmaio::wire

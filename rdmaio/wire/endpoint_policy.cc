#include "rdmaio/wire/endpoint_policy.h"

#include <algorithm>
#include <string>

namespace reelfs::rdmaio::wire {

EndpointPolicy::EndpointPolicy(const Clock& clock, EndpointPolicyOptions options)
    : clock_(clock), options_(options) {}

EndpointPolicy::Endpoint& EndpointPolicy::FindLocked(std::string_view endpoint) {
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) it = endpoints_.emplace(std::string(endpoint), Endpoint{}).first;
  return it->second;
}

Route EndpointPolicy::Choose(std::string_view endpoint, RdmaOp op) {
  MutexLock lock(mutex_);
  return ChooseLocked(endpoint, op, /*write_guard=*/op != RdmaOp::kGet);
}

Route EndpointPolicy::ChooseTwoPhaseWrite(std::string_view endpoint, RdmaOp op) {
  MutexLock lock(mutex_);
  return ChooseLocked(endpoint, op, /*write_guard=*/false);
}

Route EndpointPolicy::ChooseLocked(std::string_view endpoint, RdmaOp op, bool write_guard) {
  Endpoint& ep = FindLocked(endpoint);
  OpEntry& entry = ep.ops[static_cast<int>(op)];
  if (write_guard && !ep.speaks_rdma) return Route::kHttp;  // the 0-byte-object hazard
  if (entry.state != OpState::kDeclined) return Route::kRdma;

  const Clock::TimePoint now = clock_.Now();
  if (entry.probe_in_flight && now - entry.probe_started_at < options_.probe_lease) {
    return Route::kHttp;
  }
  if (now < entry.next_probe_at) return Route::kHttp;
  entry.probe_in_flight = true;
  entry.probe_started_at = now;
  return Route::kRdmaProbe;
}

void EndpointPolicy::DeclineLocked(OpEntry* entry, bool after_probe) {
  if (entry->state != OpState::kDeclined || entry->backoff.count() == 0) {
    entry->backoff = options_.reprobe_after;
  } else if (after_probe) {
    entry->backoff = std::min(entry->backoff * 2, options_.max_reprobe_after);
  }
  entry->state = OpState::kDeclined;
  entry->consecutive_failures = 0;
  entry->next_probe_at = clock_.Now() + entry->backoff;
}

void EndpointPolicy::Report(std::string_view endpoint, RdmaOp op, Route route,
                            EndpointSignal signal) {
  if (route == Route::kHttp) return;
  MutexLock lock(mutex_);
  Endpoint& ep = FindLocked(endpoint);
  OpEntry& entry = ep.ops[static_cast<int>(op)];
  const bool probe = route == Route::kRdmaProbe;
  if (probe) entry.probe_in_flight = false;

  // The endpoint-wide write guard reacts to every report, probe or not: one sighting of a server
  // ignoring the token is enough to stop RDMA writes.
  if (signal == EndpointSignal::kTokenIgnored) ep.speaks_rdma = false;
  if (signal == EndpointSignal::kConfirmed) ep.speaks_rdma = true;

  // While declined, only the probe decides; late answers of requests sent before the decline
  // are stale.
  if (entry.state == OpState::kDeclined && !probe) return;

  switch (signal) {
    case EndpointSignal::kNone:
      return;
    case EndpointSignal::kConfirmed:
      entry = OpEntry{};
      entry.state = OpState::kConfirmed;
      return;
    case EndpointSignal::kDeclined:
    case EndpointSignal::kTokenIgnored:
      DeclineLocked(&entry, probe);
      return;
    case EndpointSignal::kFailed:
      if (probe || ++entry.consecutive_failures >= options_.failures_before_decline) {
        DeclineLocked(&entry, probe);
      }
      return;
  }
}

OpState EndpointPolicy::state(std::string_view endpoint, RdmaOp op) const {
  MutexLock lock(mutex_);
  auto it = endpoints_.find(endpoint);
  return it == endpoints_.end() ? OpState::kUnknown : it->second.ops[static_cast<int>(op)].state;
}

bool EndpointPolicy::WritesAllowed(std::string_view endpoint) const {
  MutexLock lock(mutex_);
  auto it = endpoints_.find(endpoint);
  return it != endpoints_.end() && it->second.speaks_rdma;
}

}  // namespace reelfs::rdmaio::wire

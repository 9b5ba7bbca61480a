// WindowFence: the fencing rule for registered buffer windows, as bookkeeping.
//
// The HTTP response is the RDMA completion (docs/protocols/rdma.md §5): until it arrives the server
// may write into the window at any time. So a window whose request failed, timed out or was
// cancelled is *quarantined*: it must not be handed to another request, nor have anything else (an
// HTTP body, a FUSE reply) written into it, until it is fenced. Two fences exist:
//   * revoke: the transport deregisters / re-registers the window, so the old rkey is dead
//     (MarkFenced); this is the one that is always safe;
//   * lease: optionally, quarantine ends by itself `lease` after it began (a Ceph fork bounds late
//     deliveries this way). Off by default.
// A late response to the quarantined request also ends it, if the verdict needs no fence: the
// response proves the server is done.
//
// Every Begin returns a ticket with a per-window epoch; Finish / Abandon with a stale ticket (an
// answer to a request that was already abandoned and whose window moved on) change nothing.
//
// Thread-safety: all methods may be called from any thread (one internal mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"

namespace reelfs::rdmaio::wire {

struct WindowFenceOptions {
  // Quarantine ends by itself after this long; nullopt (default): only MarkFenced ends it.
  std::optional<Clock::Duration> lease;
};

enum class WindowState : uint8_t { kIdle, kInFlight, kQuarantined };

class WindowFence {
 public:
  using WindowId = uint64_t;  // chosen by the transport (e.g. a pool slot index)
  struct Ticket {
    WindowId window = 0;
    uint64_t epoch = 0;
    bool operator==(const Ticket&) const = default;
  };

  WindowFence(const Clock& clock, WindowFenceOptions options);

  // Starts a request into `window`, due to answer within `timeout`. kFailedPrecondition with
  // reason kWindowBusy if the window is in flight, kWindowQuarantined if it is quarantined (the
  // caller picks another window or fences this one; the prefetcher fetches over HTTP instead).
  Result<Ticket> Begin(WindowId window, Clock::Duration timeout);

  // The response arrived; `fence_needed` is ReplyVerdict::fence_window. Returns false (and
  // changes nothing) for a stale ticket.
  bool Finish(const Ticket& ticket, bool fence_needed);
  // The request ended without a response (timeout, cancel, connection lost): quarantine.
  bool Abandon(const Ticket& ticket);
  // Quarantines every in-flight request past its timeout and returns their tickets, so the
  // transport can fail them (with ClassifyNoResponse) and fence their windows.
  std::vector<Ticket> CollectOverdue();

  // The transport revoked the window's old rkey. kFailedPrecondition while a request is in
  // flight (fencing under a live request would fail it without the caller knowing).
  Status MarkFenced(WindowId window);

  WindowState state(WindowId window) const;
  // Windows waiting for a fence (lease-expired ones excluded).
  std::vector<WindowId> Quarantined() const;

 private:
  struct Entry {
    WindowState state = WindowState::kIdle;
    uint64_t epoch = 0;
    Clock::TimePoint deadline{};        // kInFlight
    Clock::TimePoint quarantined_at{};  // kQuarantined
  };

  // Applies the lease: a quarantine older than it becomes idle.
  WindowState EffectiveStateLocked(const Entry& entry) const REQUIRES(mutex_);
  Entry* FindTicketLocked(const Ticket& ticket) REQUIRES(mutex_);

  const Clock& clock_;
  const WindowFenceOptions options_;
  mutable Mutex mutex_;  // leaf lock
  std::unordered_map<WindowId, Entry> windows_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::rdmaio::wire

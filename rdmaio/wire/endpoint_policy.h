// EndpointPolicy: per endpoint and per operation, whether the next request goes over RDMA.
//
// Each (endpoint, op) is kUnknown, kConfirmed or kDeclined. Reply verdicts (reply_classifier.h)
// move it: kConfirmed confirms; kDeclined / kTokenIgnored decline at once; kFailed declines after
// `failures_before_decline` in a row. A declined op goes over HTTP, and after `reprobe_after` one
// request (the probe) tries RDMA again; each failed probe doubles the wait up to
// `max_reprobe_after`, a successful one restores the op. Servers change (RDMA enabled later, a
// fabric repaired), so a decline is never permanent.
//
// Writes are guarded harder (docs/protocols/rdma.md §4): a server that ignores the token stores a
// body-less PUT as a 0-byte object. So RDMA PUT/UploadPart is chosen only when the endpoint has
// *done* an RDMA transfer (any op confirmed) and has not since been seen ignoring the token;
// otherwise writes go over HTTP and are never used as probes. GETs are safe to try on an unknown
// endpoint: every answer to them is usable or retryable. A write sent through a two-phase flow
// whose first message stores nothing on a server that does not speak it (hipobj-rc-v2: PREPARE,
// then READY runs the transfer) is just as safe, so ChooseTwoPhaseWrite skips that guard.
//
// Time comes from the injected Clock, so tests drive re-probing by hand.
// Thread-safety: all methods may be called from any thread (one internal mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::wire {

struct EndpointPolicyOptions {
  // Consecutive kFailed verdicts (500s, violations, timeouts) that decline an op. Default: 3.
  int failures_before_decline = 3;
  // Wait before the first re-probe of a declined op. Default: 60 s.
  Clock::Duration reprobe_after = std::chrono::seconds(60);
  // Upper bound of the doubling wait between failed probes. Default: 1 h.
  Clock::Duration max_reprobe_after = std::chrono::hours(1);
  // A probe not reported within this long is treated as lost, so another may start. Default: 5 min.
  Clock::Duration probe_lease = std::chrono::minutes(5);
};

enum class OpState : uint8_t { kUnknown, kConfirmed, kDeclined };

enum class Route : uint8_t {
  kRdma,       // send with a token
  kRdmaProbe,  // send with a token; this request decides whether a declined op comes back
  kHttp,       // send without a token
};

class EndpointPolicy {
 public:
  EndpointPolicy(const Clock& clock, EndpointPolicyOptions options);

  // The route for the next `op` request to `endpoint` (e.g. "https://gw1:7070").
  Route Choose(std::string_view endpoint, RdmaOp op);
  // As Choose for a write (kPut / kUploadPart) that will go through a two-phase flow: the
  // endpoint-wide write guard does not apply; the op's own state (declined, re-probes) does.
  Route ChooseTwoPhaseWrite(std::string_view endpoint, RdmaOp op);

  // The verdict of a request sent on `route` (kNone is fine: it releases a probe). Every
  // kRdma / kRdmaProbe route must be reported exactly once; kHttp reports are ignored.
  void Report(std::string_view endpoint, RdmaOp op, Route route, EndpointSignal signal);

  OpState state(std::string_view endpoint, RdmaOp op) const;
  // Whether RDMA PUT/UploadPart may be sent to `endpoint` at all (see above).
  bool WritesAllowed(std::string_view endpoint) const;

 private:
  struct OpEntry {
    OpState state = OpState::kUnknown;
    int consecutive_failures = 0;
    Clock::Duration backoff{0};  // current wait between probes (0 until the first decline)
    Clock::TimePoint next_probe_at{};
    bool probe_in_flight = false;
    Clock::TimePoint probe_started_at{};
  };
  struct Endpoint {
    OpEntry ops[3];            // indexed by RdmaOp
    bool speaks_rdma = false;  // some op confirmed, not since seen ignoring the token
  };

  Endpoint& FindLocked(std::string_view endpoint) REQUIRES(mutex_);
  Route ChooseLocked(std::string_view endpoint, RdmaOp op, bool write_guard) REQUIRES(mutex_);
  void DeclineLocked(OpEntry* entry, bool after_probe) REQUIRES(mutex_);

  const Clock& clock_;
  const EndpointPolicyOptions options_;
  mutable Mutex mutex_;  // leaf lock: nothing is called while holding it
  std::map<std::string, Endpoint, std::less<>> endpoints_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::rdmaio::wire

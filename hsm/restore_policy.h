// The rules for waiting on a restore, in one place: what to do next about one archived object
// after a HEAD, and how long to wait before the next HEAD. Both waiters use them: the mount's
// Restorer (hsm/restorer.cc, asynchronous, one poll loop per key) and Stager::Wait
// (hsm/stager.cc, blocking rounds over many objects). Each observes (HEAD, ledger, its clock),
// asks DecideRestore, and carries the answer out; what differs between them is only what they
// observe and how they act, never the rule. docs/tape.md has the rules as a table.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <optional>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "hsm/ledger.h"
#include "hsm/state.h"

namespace reelfs::hsm {

// The error of an object `reelfs wait` finds offline with nothing asked for it.
inline constexpr std::string_view kNotRequested = "offline and not requested";

struct RestoreRules {
  Clock::Duration poll_min = std::chrono::seconds(1);
  Clock::Duration poll_max = std::chrono::seconds(60);
  int max_attempts = 3;
  // An object offline with no request known: send the first request (the mount: a reader
  // waits for it) or fail with kNotRequested (`reelfs wait` asks for nothing new).
  bool request_unrequested = true;
};

// What is known of one object after a HEAD of it.
struct RestoreObservation {
  // Classify(head, LedgerView{}, now): the server's word alone. Readable, kStaging (a restore
  // is running, whoever asked), anything else counts as offline with no restore running.
  State seen = State::kUnknown;
  bool requested = false;           // a request is known to be live (ours, or a trusted record)
  Clock::Duration since_request{};  // how long ago that request was accepted (if requested)
  int attempts = 0;                 // requests sent in this episode (the ledger's attempts)
  bool request_in_flight = false;   // a RestoreObject is out: its answer decides, not this HEAD
  bool awaited = true;              // someone waits: a HEAD nobody awaits only tells "done"
  std::string_view key;             // named in the give-up Status; "" = not named
};

enum class RestoreAction {
  kDone,          // readable: answer the waiters
  kWait,          // HEAD again after the next poll interval (NextPoll)
  kRequest,       // send the first request (attempt 1)
  kRequestAgain,  // seen offline again (released before it was read, or lost): attempt `attempts`
  kGiveUp,        // fail the object with `failure`
};

struct RestoreStep {
  RestoreAction action = RestoreAction::kWait;
  int attempts = 0;  // kRequest, kRequestAgain: the attempt the request is, for the ledger
  Status failure;    // kGiveUp: kFailedPrecondition
  // The phase the object's ledger entry moves to now, if any (with the failure for kFailed).
  // A request sent is recorded as kRequested only once the server accepts it.
  std::optional<LedgerPhase> record;
};

RestoreStep DecideRestore(const RestoreObservation& seen, const RestoreRules& rules);

// One wait between HEADs: poll_min, doubling up to poll_max. `previous` is the `next` of the
// last step, nullopt before the first poll and after a reset (the Restorer resets when a request
// is accepted, Stager::Wait after a round in which something came online).
struct PollStep {
  Clock::Duration delay;  // wait this long now
  Clock::Duration next;   // pass as `previous` next time
};
PollStep NextPoll(std::optional<Clock::Duration> previous, const RestoreRules& rules);

}  // namespace reelfs::hsm

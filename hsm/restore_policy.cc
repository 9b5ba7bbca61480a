#include "hsm/restore_policy.h"

#include <algorithm>
#include <string>

namespace reelfs::hsm {
namespace {

RestoreStep GiveUp(Status failure, std::optional<LedgerPhase> record) {
  return RestoreStep{
      .action = RestoreAction::kGiveUp, .failure = std::move(failure), .record = record};
}

}  // namespace

RestoreStep DecideRestore(const RestoreObservation& seen, const RestoreRules& rules) {
  if (IsReadable(seen.seen)) {
    return RestoreStep{.action = RestoreAction::kDone, .record = LedgerPhase::kOnline};
  }
  // The server says a restore runs, our request's answer will continue, or nobody waits.
  if (seen.seen == State::kStaging || seen.request_in_flight || !seen.awaited) {
    return RestoreStep{.action = RestoreAction::kWait};
  }
  // Offline, no restore running.
  if (!seen.requested) {
    if (rules.request_unrequested) {
      return RestoreStep{.action = RestoreAction::kRequest, .attempts = 1};
    }
    const std::string what = seen.key.empty()
                                 ? std::string(kNotRequested)
                                 : std::string(seen.key) + ": " + std::string(kNotRequested);
    return GiveUp(Status::FailedPrecondition(what), std::nullopt);
  }
  // Too soon to tell: a server may not show a freshly queued restore yet.
  if (seen.since_request < rules.poll_min) return RestoreStep{.action = RestoreAction::kWait};
  if (seen.attempts >= rules.max_attempts) {
    const std::string of = seen.key.empty() ? "" : " of " + std::string(seen.key);
    return GiveUp(Status::FailedPrecondition("restore" + of + " did not complete after " +
                                             std::to_string(seen.attempts) + " attempts"),
                  LedgerPhase::kFailed);
  }
  return RestoreStep{.action = RestoreAction::kRequestAgain, .attempts = seen.attempts + 1};
}

PollStep NextPoll(std::optional<Clock::Duration> previous, const RestoreRules& rules) {
  const Clock::Duration delay = previous.value_or(rules.poll_min);
  return PollStep{.delay = delay, .next = std::min(delay * 2, rules.poll_max)};
}

}  // namespace reelfs::hsm

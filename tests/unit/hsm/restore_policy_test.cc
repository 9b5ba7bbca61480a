// hsm::DecideRestore and hsm::NextPoll: every rule as one row of a table, for both the mount's
// rules (a first request is sent) and `reelfs wait`'s (nothing new is requested).
#include "hsm/restore_policy.h"

#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::hsm {
namespace {

using namespace std::chrono_literals;
using A = RestoreAction;

constexpr RestoreRules kMount{.poll_min = 1s, .poll_max = 8s, .max_attempts = 3};
constexpr RestoreRules kWait{
    .poll_min = 1s, .poll_max = 8s, .max_attempts = 3, .request_unrequested = false};

// Offline, our request accepted 5 s ago, one attempt: the starting point most rows vary.
RestoreObservation Offline() {
  return RestoreObservation{
      .seen = State::kOffline, .requested = true, .since_request = 5s, .attempts = 1};
}
RestoreObservation With(RestoreObservation o, auto change) {
  change(o);
  return o;
}

struct Row {
  const char* why;
  RestoreObservation seen;
  RestoreRules rules;
  RestoreAction action;
  int attempts = 0;     // kRequest, kRequestAgain
  std::string failure;  // kGiveUp: the message
  std::optional<LedgerPhase> record = std::nullopt;
};

}  // namespace

TEST_CASE("DecideRestore: one row per rule") {
  const std::vector<Row> rows = {
      // Readable ends the wait, whatever else is going on; the ledger says online.
      {"online", With(Offline(), [](auto& o) { o.seen = State::kOnline; }), kMount, A::kDone, 0, "",
       LedgerPhase::kOnline},
      {"restored, never requested", RestoreObservation{.seen = State::kRestored}, kWait, A::kDone,
       0, "", LedgerPhase::kOnline},
      {"restored while a request is in flight and nobody waits",
       With(Offline(),
            [](auto& o) {
              o.seen = State::kRestored;
              o.request_in_flight = true;
              o.awaited = false;
            }),
       kMount, A::kDone, 0, "", LedgerPhase::kOnline},
      // Waiting: the server restores, our request's answer decides, or nobody waits.
      {"server says ongoing", With(Offline(), [](auto& o) { o.seen = State::kStaging; }), kMount,
       A::kWait},
      {"ongoing, all attempts spent",
       With(Offline(),
            [](auto& o) {
              o.seen = State::kStaging;
              o.attempts = 3;
            }),
       kMount, A::kWait},
      {"ongoing, never requested (wait)", RestoreObservation{.seen = State::kStaging}, kWait,
       A::kWait},
      {"request in flight", With(Offline(), [](auto& o) { o.request_in_flight = true; }), kMount,
       A::kWait},
      {"nobody waits", RestoreObservation{.seen = State::kOffline, .awaited = false}, kMount,
       A::kWait},
      // Offline, nothing asked: the mount asks, `reelfs wait` fails the object.
      {"never requested (mount)", RestoreObservation{.seen = State::kOffline}, kMount, A::kRequest,
       1},
      {"unknown counts as offline", RestoreObservation{.seen = State::kUnknown}, kMount,
       A::kRequest, 1},
      {"never requested (wait)", RestoreObservation{.seen = State::kOffline}, kWait, A::kGiveUp, 0,
       "offline and not requested"},
      {"never requested (wait), named", RestoreObservation{.seen = State::kOffline, .key = "d/1"},
       kWait, A::kGiveUp, 0, "d/1: offline and not requested"},
      // Requested, offline, no restore running.
      {"too soon to tell", With(Offline(), [](auto& o) { o.since_request = 999ms; }), kMount,
       A::kWait},
      {"too soon, all attempts spent",
       With(Offline(),
            [](auto& o) {
              o.since_request = 0s;
              o.attempts = 3;
            }),
       kWait, A::kWait},
      {"poll_min after the request: offline again",
       With(Offline(), [](auto& o) { o.since_request = 1s; }), kMount, A::kRequestAgain, 2},
      {"offline again (wait)", Offline(), kWait, A::kRequestAgain, 2},
      {"offline again, no attempt recorded", With(Offline(), [](auto& o) { o.attempts = 0; }),
       kWait, A::kRequestAgain, 1},
      {"offline again, last attempt left", With(Offline(), [](auto& o) { o.attempts = 2; }), kMount,
       A::kRequestAgain, 3},
      {"attempts spent", With(Offline(), [](auto& o) { o.attempts = 3; }), kWait, A::kGiveUp, 0,
       "restore did not complete after 3 attempts", LedgerPhase::kFailed},
      {"attempts spent, named",
       With(Offline(),
            [](auto& o) {
              o.attempts = 3;
              o.key = "cold";
            }),
       kMount, A::kGiveUp, 0, "restore of cold did not complete after 3 attempts",
       LedgerPhase::kFailed},
      {"more attempts than allowed (another process's)",
       With(Offline(), [](auto& o) { o.attempts = 7; }), kMount, A::kGiveUp, 0,
       "restore did not complete after 7 attempts", LedgerPhase::kFailed},
  };
  for (const Row& row : rows) {
    CAPTURE(row.why);
    const RestoreStep step = DecideRestore(row.seen, row.rules);
    CHECK(step.action == row.action);
    if (row.action == A::kRequest || row.action == A::kRequestAgain) {
      CHECK(step.attempts == row.attempts);
    }
    if (row.action == A::kGiveUp) {
      CHECK(step.failure.code() == StatusCode::kFailedPrecondition);
      CHECK(step.failure.message() == row.failure);
    } else {
      CHECK(step.failure.ok());
    }
    CHECK(step.record == row.record);
  }
}

TEST_CASE("NextPoll: poll_min doubling to poll_max; nullopt starts again at poll_min") {
  struct PollRow {
    std::optional<Clock::Duration> previous;
    RestoreRules rules;
    Clock::Duration delay;
    Clock::Duration next;
  };
  const RestoreRules odd{.poll_min = 4s, .poll_max = 2s};  // not normalised: taken as given
  const std::vector<PollRow> rows = {
      {std::nullopt, kMount, 1s, 2s}, {1s, kMount, 1s, 2s}, {2s, kMount, 2s, 4s},
      {4s, kMount, 4s, 8s},           {8s, kMount, 8s, 8s}, {6s, kMount, 6s, 8s},
      {std::nullopt, odd, 4s, 2s},    {2s, odd, 2s, 2s},
  };
  for (const PollRow& row : rows) {
    CAPTURE(row.previous.value_or(-1ns).count());
    const PollStep step = NextPoll(row.previous, row.rules);
    CHECK(step.delay == row.delay);
    CHECK(step.next == row.next);
  }
  // A whole loop: 1, 2, 4, 8, 8 s.
  std::optional<Clock::Duration> previous;
  std::vector<Clock::Duration> delays;
  for (int i = 0; i < 5; ++i) {
    const PollStep step = NextPoll(previous, kMount);
    delays.push_back(step.delay);
    previous = step.next;
  }
  CHECK(delays == std::vector<Clock::Duration>{1s, 2s, 4s, 8s, 8s});
}

}  // namespace reelfs::hsm

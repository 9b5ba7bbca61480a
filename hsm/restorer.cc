// Restorer: per-key state machine behind hsm/restorer.h.
//
// Per key (KeyState) there is at most one RestoreObject in flight (request_in_flight), at most
// one HEAD in flight (head_in_flight) and at most one poll timer (poll_timer); waiters and
// Request() callers attach to whatever is running. Every decision is taken under mutex_, and
// what must happen outside it (store calls, user callbacks, CancellationToken registration,
// ledger writes) is collected as Actions and run after the lock is released. What a HEAD answer
// leads to (done, poll again, request, request again, give up) and the poll intervals are
// DecideRestore and NextPoll (hsm/restore_policy.h), the rules Stager::Wait follows too; this
// file observes (ObserveLocked) and acts (ApplyLocked).
//
// Behaviour decisions (the header leaves these open):
//  - WaitOnline joins a HEAD or RestoreObject already in flight for the key, and a scheduled poll
//    if the key's last HEAD was sent less than poll_min ago; otherwise it sends a HEAD at once.
//    So fifty readers arriving together cause one HEAD, and a reader arriving late into a loop
//    that is backing off towards poll_max does not wait for the whole backoff.
//  - "Live request": our RestoreObject was accepted (200/202/409) and no HEAD has shown the object
//    readable since; or a ledger entry in phase requested whose requested_at is younger than
//    trust_requested (another process's, or an earlier run's) was adopted. A live request is
//    never sent again merely because time passes; only the rule below re-requests.
//  - "Seen offline again" (the releaser race, or a lost request): a HEAD answer, while waiters
//    exist, that is not readable and carries no ongoing restore, for a key whose live request was
//    accepted (or, adopted from the ledger, requested) at least poll_min ago (wall time of the
//    timer's clock). Then the key is requested again with attempts + 1, or, once attempts has
//    reached max_attempts, every waiter fails with kFailedPrecondition and the ledger says failed.
//    A HEAD that says the restore is ongoing (whoever asked) never triggers a request.
//  - A HEAD error that is retryable (the store already retried it) keeps the poll loop going,
//    bounded by each waiter's deadline; any other HEAD error (NoSuchKey, AccessDenied) fails every
//    waiter of the key with it.
//  - A RestoreObject error (after the store's own retries) fails every Request() caller and every
//    waiter of the key with that Status. A permanent one is written to the ledger as failed; a
//    retryable one (503) is not (nothing was refused for good).
//  - After kOk (200) the key is HEADed at once, waiters or not: on AWS it is already restored, on
//    versitygw it was just accepted; the HEAD tells which.
//  - NoteOffline drops LastSeen for the key. The restorer never trusts an "online" ledger entry
//    nor a remembered "readable" HEAD (every WaitOnline is answered from a HEAD sent after it, or
//    joins a loop whose last HEAD, under poll_min old, said not readable), so nothing else needs
//    undoing.
//  - A HEAD showing the object readable ends the live request (ledger phase online) and answers
//    every waiter; a key with neither waiters nor a live request is forgotten, except LastSeen.
//  - Shutdown answers every waiter and Request() caller with kCancelled, cancels every timer and
//    drops queued store calls; answers of calls already sent are ignored.
#include "hsm/restorer.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "hsm/restore_policy.h"
#include "hsm/state.h"

namespace reelfs::hsm {
namespace {

// LastSeen is kept for this many keys at most (a mount may touch millions of objects; this is a
// convenience, not a cache anyone depends on).
constexpr size_t kMaxRemembered = 100'000;

using Actions = std::vector<std::function<void()>>;

void RunAll(Actions& actions) {
  for (auto& action : actions) action();
  actions.clear();
}

class RestorerImpl final : public Restorer, public std::enable_shared_from_this<RestorerImpl> {
 public:
  RestorerImpl(std::shared_ptr<s3::ObjectStore> store, std::shared_ptr<Ledger> ledger, Timer& timer,
               RestorerOptions options)
      : store_(std::move(store)),
        ledger_(std::move(ledger)),
        timer_(timer),
        options_(std::move(options)) {
    if (options_.poll_min <= Clock::Duration::zero()) options_.poll_min = std::chrono::seconds(1);
    options_.poll_max = std::max(options_.poll_max, options_.poll_min);
    options_.max_attempts = std::max(options_.max_attempts, 1);
    options_.max_in_flight = std::max<size_t>(options_.max_in_flight, 1);
    rules_ = RestoreRules{.poll_min = options_.poll_min,
                          .poll_max = options_.poll_max,
                          .max_attempts = options_.max_attempts,
                          .request_unrequested = true};
  }
  ~RestorerImpl() override { Shutdown(); }

  void Request(const std::string& key, const std::string& etag, uint64_t size,
               s3::StatusCallback done) override;
  void WaitOnline(const std::string& key, Clock::TimePoint deadline,
                  std::shared_ptr<CancellationToken> cancel,
                  s3::Callback<s3::ObjectInfo> done) override;
  void NoteOffline(const std::string& key) override;
  std::optional<s3::ObjectInfo> LastSeen(const std::string& key) const override;
  bool IsRequested(const std::string& key) override;
  RestorerCounters counters() const override;
  void Shutdown() override;

 private:
  struct Waiter {
    s3::Callback<s3::ObjectInfo> done;
    Timer::Id deadline_timer = 0;
    std::shared_ptr<CancellationToken> cancel;
    uint64_t cancel_id = 0;
  };

  struct KeyState {
    // The request.
    bool request_in_flight = false;
    std::vector<s3::StatusCallback> request_callers;  // Request() calls waiting for its answer
    bool live = false;           // accepted (or adopted from the ledger), not yet seen readable
    s3::WallTime accepted_at{};  // when the live request was accepted / requested (wall)
    int attempts = 0;            // requests of the current episode, as the ledger counts them
    std::string etag;            // for the ledger
    uint64_t size = 0;
    // Waiting and polling.
    std::map<uint64_t, Waiter> waiters;
    bool head_in_flight = false;
    Timer::Id poll_timer = 0;
    std::optional<Clock::Duration> poll_interval;  // NextPoll's `previous` (none: poll_min)
    std::optional<Clock::TimePoint> last_head_at;
  };

  // A store call waiting for a slot under max_in_flight.
  struct QueuedCall {
    uint64_t RestorerCounters::*counter;
    std::function<void()> call;
  };

  LedgerKey IdOf(const std::string& key) const { return {options_.endpoint, options_.bucket, key}; }
  // The ledger entry of a request of `key` this process sent, as of `now`.
  LedgerEntry EntryOf(const std::string& key, const KeyState& ks, LedgerPhase phase,
                      s3::WallTime now, int attempts, std::string error = {}) const {
    LedgerEntry entry;
    entry.id = IdOf(key);
    entry.phase = phase;
    entry.etag = ks.etag;
    entry.size = ks.size;
    entry.tier = options_.params.tier;
    entry.days = options_.params.days;
    entry.requested_at = now;
    entry.updated_at = now;
    entry.attempts = attempts;
    entry.last_error = std::move(error);
    return entry;
  }
  s3::WallTime WallNow() const { return timer_.clock().WallNow(); }
  std::weak_ptr<RestorerImpl> Weak() { return weak_from_this(); }

  // Whether a ledger entry is a request to trust (phase requested, young enough).
  bool Trusted(const std::optional<LedgerEntry>& entry, s3::WallTime now) const {
    return entry.has_value() && entry->phase == LedgerPhase::kRequested &&
           now - entry->requested_at < options_.trust_requested;
  }
  std::optional<LedgerEntry> FindInLedger(const std::string& key) {
    if (!ledger_) return std::nullopt;
    Result<std::optional<LedgerEntry>> entry = ledger_->Find(IdOf(key));
    if (!entry.ok()) {
      REELFS_LOG_DEBUG("hsm", "ledger lookup of {}: {}", key, entry.status().ToString());
      return std::nullopt;
    }
    return *entry;
  }
  // Ledger writes are best effort: the ledger only saves duplicate requests.
  void LedgerWrite(const std::string& key, const Status& status) {
    if (!status.ok()) {
      REELFS_LOG_WARN("hsm", "ledger update for {} failed: {}", key, status.ToString());
    }
  }
  std::function<void()> LedgerSetPhaseAction(const std::string& key, LedgerPhase phase,
                                             std::string error) {
    return [this, self = shared_from_this(), key, phase, error = std::move(error)] {
      if (ledger_) LedgerWrite(key, ledger_->SetPhase(IdOf(key), phase, error, WallNow()));
    };
  }

  // --- All of the below run with mutex_ held. ---
  void LaunchLocked(uint64_t RestorerCounters::*counter, std::function<void()> call,
                    Actions& actions) REQUIRES(mutex_);
  void CallDoneLocked(Actions& actions) REQUIRES(mutex_);
  void StartHeadLocked(const std::string& key, KeyState& ks, Actions& actions) REQUIRES(mutex_);
  void PollSoonLocked(const std::string& key, KeyState& ks, Actions& actions) REQUIRES(mutex_);
  void SchedulePollLocked(const std::string& key, KeyState& ks) REQUIRES(mutex_);
  void CancelPollLocked(KeyState& ks) REQUIRES(mutex_);
  void SendRequestLocked(const std::string& key, KeyState& ks, int attempts, Actions& actions)
      REQUIRES(mutex_);
  void AnswerWaitersLocked(KeyState& ks, const Result<s3::ObjectInfo>& answer, Actions& actions)
      REQUIRES(mutex_);
  void MaybeForgetLocked(const std::string& key) REQUIRES(mutex_);
  void RememberLocked(const std::string& key, const s3::ObjectInfo& info) REQUIRES(mutex_);
  // What a HEAD answer `info` (readable or not) tells DecideRestore about `key`, as of `now`.
  RestoreObservation ObserveLocked(const std::string& key, const KeyState& ks,
                                   const s3::ObjectInfo& info, s3::WallTime now) const
      REQUIRES(mutex_);
  // Carries out DecideRestore's step for `key` after the HEAD answer `info`.
  void ApplyLocked(const std::string& key, KeyState& ks, const s3::ObjectInfo& info,
                   const RestoreStep& step, Actions& actions) REQUIRES(mutex_);

  // --- Completions (take mutex_). ---
  void OnHead(const std::string& key, Result<s3::ObjectInfo> result);
  void OnRestore(const std::string& key, int attempts, Result<s3::RestoreOutcome> result);
  void OnPollTimer(const std::string& key);
  void FinishWaiter(const std::string& key, uint64_t id, Status status, bool from_cancel);

  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<Ledger> ledger_;  // may be null: no ledger
  Timer& timer_;
  RestorerOptions options_;
  RestoreRules rules_;  // options_'s, after the constructor's clamps

  mutable Mutex mutex_;  // before the Timer's and the Ledger's own locks; never held while
                         // a callback, a store call or ledger I/O runs
  bool shutdown_ GUARDED_BY(mutex_) = false;
  std::unordered_map<std::string, KeyState> keys_ GUARDED_BY(mutex_);
  std::unordered_map<std::string, s3::ObjectInfo> last_seen_ GUARDED_BY(mutex_);
  uint64_t next_waiter_ GUARDED_BY(mutex_) = 1;
  size_t in_flight_ GUARDED_BY(mutex_) = 0;
  std::deque<QueuedCall> queued_ GUARDED_BY(mutex_);
  RestorerCounters counters_ GUARDED_BY(mutex_);
};

// --- Store calls under max_in_flight ---

void RestorerImpl::LaunchLocked(uint64_t RestorerCounters::*counter, std::function<void()> call,
                                Actions& actions) {
  if (in_flight_ < options_.max_in_flight) {
    ++in_flight_;
    ++(counters_.*counter);
    actions.push_back(std::move(call));
  } else {
    queued_.push_back({counter, std::move(call)});
  }
}

void RestorerImpl::CallDoneLocked(Actions& actions) {
  if (!queued_.empty() && !shutdown_) {
    QueuedCall next = std::move(queued_.front());
    queued_.pop_front();
    ++(counters_.*next.counter);
    actions.push_back(std::move(next.call));  // takes over the slot
  } else {
    --in_flight_;
  }
}

// --- Polling ---

void RestorerImpl::StartHeadLocked(const std::string& key, KeyState& ks, Actions& actions) {
  if (ks.head_in_flight) return;
  CancelPollLocked(ks);
  ks.head_in_flight = true;
  ks.last_head_at = timer_.clock().Now();
  LaunchLocked(
      &RestorerCounters::head_requests,
      [this, self = shared_from_this(), key] {
        store_->HeadObject({options_.bucket, key}, [self, key](Result<s3::ObjectInfo> result) {
          self->OnHead(key, std::move(result));
        });
      },
      actions);
}

void RestorerImpl::PollSoonLocked(const std::string& key, KeyState& ks, Actions& actions) {
  if (ks.head_in_flight || ks.request_in_flight) return;  // their answers continue the loop
  if (ks.poll_timer != 0 && ks.last_head_at.has_value() &&
      timer_.clock().Now() - *ks.last_head_at < options_.poll_min) {
    return;  // a poll is due soon and the last answer is fresh
  }
  StartHeadLocked(key, ks, actions);
}

void RestorerImpl::SchedulePollLocked(const std::string& key, KeyState& ks) {
  if (ks.waiters.empty() || ks.head_in_flight || ks.request_in_flight || ks.poll_timer != 0) {
    return;
  }
  const PollStep step = NextPoll(ks.poll_interval, rules_);
  ks.poll_interval = step.next;
  // Timer::After never calls back under its own lock, so calling it under ours is safe.
  ks.poll_timer = timer_.After(step.delay, [weak = Weak(), key] {
    if (auto self = weak.lock()) self->OnPollTimer(key);
  });
}

void RestorerImpl::CancelPollLocked(KeyState& ks) {
  if (ks.poll_timer != 0) timer_.Cancel(ks.poll_timer);
  ks.poll_timer = 0;
}

void RestorerImpl::OnPollTimer(const std::string& key) {
  Actions actions;
  {
    MutexLock lock(mutex_);
    if (shutdown_) return;
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    KeyState& ks = it->second;
    ks.poll_timer = 0;
    if (!ks.waiters.empty()) StartHeadLocked(key, ks, actions);
  }
  RunAll(actions);
}

// --- Requests ---

void RestorerImpl::SendRequestLocked(const std::string& key, KeyState& ks, int attempts,
                                     Actions& actions) {
  CancelPollLocked(ks);
  ks.request_in_flight = true;
  s3::RestoreObjectRequest req{.bucket = options_.bucket,
                               .key = key,
                               .days = options_.params.days,
                               .tier = options_.params.tier};
  LaunchLocked(
      &RestorerCounters::restore_requests,
      [this, self = shared_from_this(), key, attempts, req = std::move(req)] {
        store_->RestoreObject(req, [self, key, attempts](Result<s3::RestoreOutcome> result) {
          self->OnRestore(key, attempts, std::move(result));
        });
      },
      actions);
}

void RestorerImpl::OnRestore(const std::string& key, int attempts,
                             Result<s3::RestoreOutcome> result) {
  Actions actions;
  std::vector<s3::StatusCallback> callers;
  Status status = result.ok() ? Status::Ok() : result.status();
  {
    MutexLock lock(mutex_);
    CallDoneLocked(actions);
    if (shutdown_) {
      // Callers were answered by Shutdown; only the queue slot matters.
    } else if (auto it = keys_.find(key); it != keys_.end()) {
      KeyState& ks = it->second;
      ks.request_in_flight = false;
      callers.swap(ks.request_callers);
      const s3::WallTime now = WallNow();
      if (result.ok()) {
        ks.live = true;
        ks.accepted_at = now;
        ks.attempts = attempts;
        ks.poll_interval.reset();  // a new request: poll from poll_min again
        LedgerEntry entry = EntryOf(key, ks, LedgerPhase::kRequested, now, attempts);
        actions.push_back([this, self = shared_from_this(), key, entry = std::move(entry)] {
          if (ledger_) LedgerWrite(key, ledger_->Upsert(entry));
        });
        if (*result == s3::RestoreOutcome::kOk) {
          StartHeadLocked(key, ks, actions);  // already restored (AWS) or just accepted?
        } else {
          SchedulePollLocked(key, ks);
        }
      } else {
        ks.live = false;
        if (!IsRetryable(status)) {
          ++counters_.failures;
          LedgerEntry entry =
              EntryOf(key, ks, LedgerPhase::kFailed, now, attempts, status.ToString());
          actions.push_back([this, self = shared_from_this(), key, entry = std::move(entry)] {
            if (ledger_) LedgerWrite(key, ledger_->Upsert(entry));
          });
        }
        AnswerWaitersLocked(ks, status.WithContext("RestoreObject " + key), actions);
        MaybeForgetLocked(key);
      }
    }
  }
  RunAll(actions);
  for (auto& done : callers) done(status);
}

void RestorerImpl::Request(const std::string& key, const std::string& etag, uint64_t size,
                           s3::StatusCallback done) {
  // Read before the lock: ledger I/O never runs under mutex_.
  std::optional<LedgerEntry> entry = FindInLedger(key);
  Actions actions;
  Status answer;
  bool answered = true;
  {
    MutexLock lock(mutex_);
    if (shutdown_) {
      answer = Status::Cancelled("restorer shut down");
    } else {
      KeyState& ks = keys_[key];
      if (!etag.empty()) ks.etag = etag;
      if (size != 0) ks.size = size;
      auto seen = last_seen_.find(key);
      const bool server_staging = seen != last_seen_.end() && seen->second.restore.has_value() &&
                                  seen->second.restore->ongoing;
      const s3::WallTime now = WallNow();
      if (ks.request_in_flight) {
        ks.request_callers.push_back(std::move(done));
        answered = false;
      } else if (ks.live || server_staging) {
        // Joined: a live request, or the server said a restore is running.
      } else if (Trusted(entry, now)) {
        ks.live = true;
        ks.accepted_at = entry->requested_at;
        ks.attempts = entry->attempts;
      } else {
        ks.request_callers.push_back(std::move(done));
        answered = false;
        SendRequestLocked(key, ks, /*attempts=*/1, actions);
      }
      if (answered) MaybeForgetLocked(key);
    }
  }
  RunAll(actions);
  if (answered) done(std::move(answer));
}

// --- Waiting ---

void RestorerImpl::WaitOnline(const std::string& key, Clock::TimePoint deadline,
                              std::shared_ptr<CancellationToken> cancel,
                              s3::Callback<s3::ObjectInfo> done) {
  if (cancel && cancel->cancelled()) {
    done(Status::Cancelled("wait for " + key + " cancelled"));
    return;
  }
  const Clock::TimePoint now = timer_.clock().Now();
  if (deadline <= now) {
    done(Status::DeadlineExceeded("wait for " + key + ": deadline already passed"));
    return;
  }
  Actions actions;
  uint64_t id = 0;
  {
    MutexLock lock(mutex_);
    if (shutdown_) {
      actions.push_back(
          [done = std::move(done)] { done(Status::Cancelled("restorer shut down")); });
    } else {
      id = next_waiter_++;
      KeyState& ks = keys_[key];
      Waiter& w = ks.waiters[id];
      w.done = std::move(done);
      w.cancel = cancel;
      // TimePoint::max() means no deadline: no timer (and no overflow in the timer's sums).
      if (deadline != Clock::TimePoint::max()) {
        w.deadline_timer = timer_.After(deadline - now, [weak = Weak(), key, id] {
          if (auto self = weak.lock()) {
            self->FinishWaiter(
                key, id,
                Status::DeadlineExceeded("restore of " + key + " did not complete by the deadline"),
                /*from_cancel=*/false);
          }
        });
      }
      ++counters_.waiters;
      PollSoonLocked(key, ks, actions);
    }
  }
  RunAll(actions);
  if (id == 0 || !cancel) return;
  // Registered outside the lock: OnCancel runs the callback at once if the token fired since.
  uint64_t cancel_id = cancel->OnCancel([weak = Weak(), key, id] {
    if (auto self = weak.lock()) {
      self->FinishWaiter(key, id, Status::Cancelled("wait for " + key + " cancelled"),
                         /*from_cancel=*/true);
    }
  });
  if (cancel_id == 0) return;  // already ran
  bool still_waiting = false;
  {
    MutexLock lock(mutex_);
    if (auto it = keys_.find(key); it != keys_.end()) {
      if (auto w = it->second.waiters.find(id); w != it->second.waiters.end()) {
        w->second.cancel_id = cancel_id;
        still_waiting = true;
      }
    }
  }
  // Answered in between: its cleanup could not see the id, so drop the callback here.
  if (!still_waiting) cancel->RemoveOnCancel(cancel_id);
}

void RestorerImpl::FinishWaiter(const std::string& key, uint64_t id, Status status,
                                bool from_cancel) {
  Waiter waiter;
  {
    MutexLock lock(mutex_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    KeyState& ks = it->second;
    auto w = ks.waiters.find(id);
    if (w == ks.waiters.end()) return;  // answered already
    waiter = std::move(w->second);
    ks.waiters.erase(w);
    --counters_.waiters;
    if (waiter.deadline_timer != 0) timer_.Cancel(waiter.deadline_timer);
    if (ks.waiters.empty()) CancelPollLocked(ks);
    MaybeForgetLocked(key);
  }
  // A token's callback must not call back into the token: from_cancel skips RemoveOnCancel
  // (the token dropped the callback itself when it ran it).
  if (!from_cancel && waiter.cancel && waiter.cancel_id != 0) {
    waiter.cancel->RemoveOnCancel(waiter.cancel_id);
  }
  waiter.done(std::move(status));
}

void RestorerImpl::AnswerWaitersLocked(KeyState& ks, const Result<s3::ObjectInfo>& answer,
                                       Actions& actions) {
  for (auto& [id, waiter] : ks.waiters) {
    if (waiter.deadline_timer != 0) timer_.Cancel(waiter.deadline_timer);
    --counters_.waiters;
    actions.push_back([w = std::move(waiter), answer] {
      if (w.cancel && w.cancel_id != 0) w.cancel->RemoveOnCancel(w.cancel_id);
      w.done(answer);
    });
  }
  ks.waiters.clear();
  CancelPollLocked(ks);
}

void RestorerImpl::OnHead(const std::string& key, Result<s3::ObjectInfo> result) {
  // Whether the ledger may matter: the object is not readable and no restore is running. Read
  // it before taking the lock (ledger I/O never runs under mutex_).
  std::optional<LedgerEntry> entry;
  const s3::WallTime now = WallNow();
  if (result.ok() && !IsReadable(Classify(*result, {}, now)) &&
      !(result->restore.has_value() && result->restore->ongoing)) {
    entry = FindInLedger(key);
  }
  Actions actions;
  {
    MutexLock lock(mutex_);
    CallDoneLocked(actions);
    auto it = keys_.find(key);
    if (shutdown_ || it == keys_.end()) {
      // Shut down, or nothing to do with the answer.
    } else {
      KeyState& ks = it->second;
      ks.head_in_flight = false;
      if (!result.ok()) {
        if (IsRetryable(result.status())) {
          SchedulePollLocked(key, ks);  // transient: keep polling until the deadlines
        } else {
          AnswerWaitersLocked(ks, result.status().WithContext("HEAD " + key), actions);
        }
      } else {
        const s3::ObjectInfo& info = *result;
        RememberLocked(key, info);
        if (!info.etag.empty()) ks.etag = info.etag;
        ks.size = info.size;
        RestoreStep step = DecideRestore(ObserveLocked(key, ks, info, now), rules_);
        if (step.action == RestoreAction::kRequest && Trusted(entry, now)) {
          // Another process (or an earlier run) asked: trust it, as the header promises.
          ks.live = true;
          ks.accepted_at = entry->requested_at;
          ks.attempts = entry->attempts;
          step = DecideRestore(ObserveLocked(key, ks, info, now), rules_);
        }
        ApplyLocked(key, ks, info, step, actions);
      }
      MaybeForgetLocked(key);
    }
  }
  RunAll(actions);
}

RestoreObservation RestorerImpl::ObserveLocked(const std::string& key, const KeyState& ks,
                                               const s3::ObjectInfo& info, s3::WallTime now) const {
  return RestoreObservation{
      .seen = Classify(info, LedgerView{}, now),
      .requested = ks.live,
      .since_request = ks.live ? std::chrono::duration_cast<Clock::Duration>(now - ks.accepted_at)
                               : Clock::Duration{},
      .attempts = ks.attempts,
      .request_in_flight = ks.request_in_flight,
      .awaited = !ks.waiters.empty(),
      .key = key};
}

void RestorerImpl::ApplyLocked(const std::string& key, KeyState& ks, const s3::ObjectInfo& info,
                               const RestoreStep& step, Actions& actions) {
  switch (step.action) {
    case RestoreAction::kDone:
      // Only a request we know of has an entry to update (no ledger read per readable HEAD).
      if (ks.live && step.record) actions.push_back(LedgerSetPhaseAction(key, *step.record, ""));
      ks.live = false;
      ks.attempts = 0;
      if (!ks.waiters.empty()) ++counters_.completed;
      AnswerWaitersLocked(ks, info, actions);
      break;
    case RestoreAction::kWait:
      SchedulePollLocked(key, ks);
      break;
    case RestoreAction::kRequest:
      SendRequestLocked(key, ks, step.attempts, actions);
      break;
    case RestoreAction::kRequestAgain:
      ++counters_.re_requests;
      REELFS_LOG_INFO("hsm", "{} is offline again after restore attempt {}; requesting again", key,
                      ks.attempts);
      SendRequestLocked(key, ks, step.attempts, actions);
      break;
    case RestoreAction::kGiveUp:
      ++counters_.failures;
      ks.live = false;
      if (step.record) {
        actions.push_back(LedgerSetPhaseAction(key, *step.record, step.failure.ToString()));
      }
      AnswerWaitersLocked(ks, step.failure, actions);
      break;
  }
}

// --- Bookkeeping ---

void RestorerImpl::MaybeForgetLocked(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  const KeyState& ks = it->second;
  if (ks.waiters.empty() && ks.request_callers.empty() && !ks.request_in_flight &&
      !ks.head_in_flight && ks.poll_timer == 0 && !ks.live) {
    keys_.erase(it);
  }
}

void RestorerImpl::RememberLocked(const std::string& key, const s3::ObjectInfo& info) {
  if (last_seen_.size() >= kMaxRemembered && !last_seen_.contains(key)) {
    last_seen_.erase(last_seen_.begin());  // any: LastSeen is advisory
  }
  last_seen_[key] = info;
}

void RestorerImpl::NoteOffline(const std::string& key) {
  MutexLock lock(mutex_);
  last_seen_.erase(key);
}

std::optional<s3::ObjectInfo> RestorerImpl::LastSeen(const std::string& key) const {
  MutexLock lock(mutex_);
  auto it = last_seen_.find(key);
  if (it == last_seen_.end()) return std::nullopt;
  return it->second;
}

bool RestorerImpl::IsRequested(const std::string& key) {
  {
    MutexLock lock(mutex_);
    auto it = keys_.find(key);
    if (it != keys_.end() && (it->second.live || it->second.request_in_flight)) return true;
  }
  return Trusted(FindInLedger(key), WallNow());
}

RestorerCounters RestorerImpl::counters() const {
  MutexLock lock(mutex_);
  return counters_;
}

void RestorerImpl::Shutdown() {
  std::vector<Waiter> waiters;
  std::vector<s3::StatusCallback> callers;
  {
    MutexLock lock(mutex_);
    if (shutdown_) return;
    shutdown_ = true;
    for (auto& [key, ks] : keys_) {
      CancelPollLocked(ks);
      for (auto& [id, waiter] : ks.waiters) {
        if (waiter.deadline_timer != 0) timer_.Cancel(waiter.deadline_timer);
        waiters.push_back(std::move(waiter));
      }
      for (auto& done : ks.request_callers) callers.push_back(std::move(done));
    }
    counters_.waiters = 0;
    keys_.clear();
    queued_.clear();  // never sent; their slots were never taken
  }
  const Status cancelled = Status::Cancelled("restorer shut down");
  for (Waiter& w : waiters) {
    if (w.cancel && w.cancel_id != 0) w.cancel->RemoveOnCancel(w.cancel_id);
    w.done(cancelled);
  }
  for (auto& done : callers) done(cancelled);
}

}  // namespace

std::shared_ptr<Restorer> Restorer::Create(std::shared_ptr<s3::ObjectStore> store,
                                           std::shared_ptr<Ledger> ledger, Timer& timer,
                                           RestorerOptions options) {
  return std::make_shared<RestorerImpl>(std::move(store), std::move(ledger), timer,
                                        std::move(options));
}

}  // namespace reelfs::hsm

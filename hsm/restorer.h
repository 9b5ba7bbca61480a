// Restorer: one process's restore requests and waits for one bucket, single-flight per object
// (docs/semantics.md "Offline objects"). The mount daemon uses it for reads of offline
// objects (--offline=wait|eagain) and `setfattr user.hsm.request`; `reelfs wait` uses it too.
//
// Per key there is at most one RestoreObject in flight and at most one HEAD poll loop, however
// many callers ask or wait: fifty readers of one offline object cause exactly one RestoreObject.
// A request is not sent again while the ledger holds a live "requested" entry for the key (the
// CLI's or another mount's) younger than RestorerOptions::trust_requested, or while a HEAD says
// the restore is ongoing. 200, 202 and 409 count as accepted; 503 and other retryable errors are
// retried by the ObjectStore's policy and then reported; other refusals are permanent.
//
// Polling: while a key has waiters, HEAD it after poll_min, doubling up to poll_max. A poll that
// finds the object readable completes every waiter (ledger phase online). A poll that finds it
// offline with no restore ongoing, after our request was accepted at least poll_min ago, means
// the restored copy was released before it was read, or the request was lost: the key is
// requested again (ledger attempts + 1), up to max_attempts, after which waiters fail with
// kFailedPrecondition ("restore did not complete after N attempts") and the ledger says failed.
// These rules are DecideRestore and NextPoll (hsm/restore_policy.h), shared with Stager::Wait.
//
// Thread-safety: all methods may be called concurrently from any thread. Callbacks run on the
// ObjectStore's or the Timer's thread (or the caller's, for immediate answers), never under an
// internal lock; each runs exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/cancel.h"
#include "common/clock.h"
#include "common/result.h"
#include "common/timer.h"
#include "hsm/ledger.h"
#include "s3/object_store.h"

namespace reelfs::hsm {

struct RestoreParams {
  s3::RestoreTier tier = s3::RestoreTier::kStandard;
  // Days the restored copy stays (GLACIER / DEEP_ARCHIVE need it; versitygw ignores it).
  std::optional<int> days = 7;
};

struct RestorerOptions {
  std::string endpoint;  // ledger identity of the server (LedgerKey::endpoint)
  std::string bucket;
  RestoreParams params;
  Clock::Duration poll_min = std::chrono::seconds(1);
  Clock::Duration poll_max = std::chrono::seconds(60);
  // A ledger "requested" entry younger than this is trusted: no new RestoreObject is sent.
  Clock::Duration trust_requested = std::chrono::hours(1);
  int max_attempts = 3;
  // RestoreObject and HEAD requests in flight at once, all keys together (the rest queue).
  size_t max_in_flight = 32;
};

struct RestorerCounters {
  uint64_t restore_requests = 0;  // RestoreObject calls sent
  uint64_t head_requests = 0;     // HEAD polls sent
  uint64_t waiters = 0;           // WaitOnline calls not yet answered
  uint64_t completed = 0;         // keys seen readable after waiting
  uint64_t re_requests = 0;       // keys requested again after coming back offline
  uint64_t failures = 0;          // keys given up on
};

class Restorer {
 public:
  static std::shared_ptr<Restorer> Create(std::shared_ptr<s3::ObjectStore> store,
                                          std::shared_ptr<Ledger> ledger, Timer& timer,
                                          RestorerOptions options);
  virtual ~Restorer() = default;

  // Makes sure a restore of `key` has been asked for (sent now, joined, or trusted from the
  // ledger). `etag` and `size` go to the ledger. done(OK) once accepted or joined.
  virtual void Request(const std::string& key, const std::string& etag, uint64_t size,
                       s3::StatusCallback done) = 0;

  // Calls done(info) once a HEAD shows `key` readable (hsm::IsReadable), requesting a restore
  // first when the first HEAD shows it is not and none is live. kDeadlineExceeded at `deadline`
  // (timer clock), kCancelled as soon as `cancel` (may be null) fires, or the permanent error.
  virtual void WaitOnline(const std::string& key, Clock::TimePoint deadline,
                          std::shared_ptr<CancellationToken> cancel,
                          s3::Callback<s3::ObjectInfo> done) = 0;

  // A GET answered InvalidObjectState: any belief that `key` is readable is dropped, so the next
  // WaitOnline requests again instead of trusting an "online" ledger entry.
  virtual void NoteOffline(const std::string& key) = 0;

  // What the latest HEAD poll or Request outcome said about `key`, if anything.
  virtual std::optional<s3::ObjectInfo> LastSeen(const std::string& key) const = 0;
  // Whether a request for `key` is live (in flight, accepted and not yet seen done, or trusted
  // from the ledger): the object is "staging" even if the server does not say so.
  virtual bool IsRequested(const std::string& key) = 0;

  virtual RestorerCounters counters() const = 0;
  // Fails every waiter with kCancelled and stops polling; later calls fail with kCancelled.
  // Idempotent. Must run before the ObjectStore or the Timer is destroyed.
  virtual void Shutdown() = 0;
};

}  // namespace reelfs::hsm

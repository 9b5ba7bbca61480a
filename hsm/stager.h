// Stager: bulk staging for `reelfs stage`, `reelfs status`, `reelfs wait` and a directory's
// `setfattr -n user.hsm.request -v stage` (docs/tape.md).
//
//  1. Enumerate: list the targets (a prefix recursively, a key by HEAD), with RestoreStatus and
//     tape hints requested; HEAD the archive-class objects whose listing said nothing about
//     restores (versitygw, s3rver), max_in_flight at a time, so restored and staging objects are
//     told apart from offline ones; merge what the ledger knows (hsm/state.h Classify).
//  2. Plan: keep what is offline and not requested, in tape order (hsm/tape_order.h: cartridge
//     in order of its first key, then block; objects without a hint last, by key).
//  3. Submit: the whole plan at once, at most max_requests_per_second and max_in_flight; 200,
//     202 and 409 are success; retryable errors (503 SlowDown, throttling) are retried with
//     backoff by the store; Expedited answered 503 GlacierExpeditedRetrievalNotAvailable falls
//     back to Standard; other refusals are recorded per object. The ledger is written in
//     batches (one transaction per up to 500 objects) with the batch id.
//  4. Wait: HEAD the requested objects not yet readable, in rounds (poll_min doubling to
//     poll_max, reset when a round sees progress); an object seen offline again with no restore
//     ongoing is requested again (ledger attempts + 1) up to max_attempts, then failed. These
//     rules are DecideRestore and NextPoll (hsm/restore_policy.h), shared with the Restorer.
//
// Blocking: every method waits for its requests (s3/await.h), so call it from a thread that is
// not the store's event loop (the CLI's main thread, a worker thread of the daemon).
// Thread-safety: one Stager per thread; the store and the ledger may be shared.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "hsm/ledger.h"
#include "hsm/restorer.h"
#include "hsm/state.h"
#include "s3/object_store.h"

namespace reelfs::hsm {

struct StageTarget {
  std::string key;         // an object key, or a prefix ("" or ending in '/') when is_prefix
  bool is_prefix = false;  // enumerate every key below (recursively)
  std::string display;     // how to show it (the path the user gave), "" = the key
};

struct StageObject {
  std::string key;
  std::string display;  // the user's path for this object ("" = key)
  uint64_t size = 0;
  std::string etag;
  std::string storage_class;
  std::optional<s3::RestoreInfo> restore;
  std::string restore_header;  // x-amz-restore as received from a HEAD, "" if none
  std::optional<TapeHint> hint;
  State state = State::kUnknown;
  int attempts = 0;   // restore requests sent by this host (ledger)
  std::string error;  // why it failed, "" if it did not
};

struct StageOptions {
  RestoreParams params;
  double max_requests_per_second = 200;
  size_t max_in_flight = 16;
  Clock::Duration poll_min = std::chrono::seconds(1);
  Clock::Duration poll_max = std::chrono::seconds(60);
  int max_attempts = 3;
  std::string batch;  // ledger batch id ("" = none)
};

// Counts and bytes per state, for progress lines, --json and user.hsm.summary.
struct StageSummary {
  uint64_t objects[5] = {};  // indexed by State
  uint64_t bytes[5] = {};
  uint64_t failed = 0;  // objects with an error
  uint64_t total_objects = 0;
  uint64_t total_bytes = 0;
  uint64_t cartridges = 0;          // distinct cartridges among hinted objects (0: no hints)
  uint64_t cartridges_pending = 0;  // of those, ones still holding a non-readable object
  static StageSummary Of(const std::vector<StageObject>& objects);
};

struct StageProgress {
  StageSummary summary;
  Clock::Duration elapsed{};
  std::optional<Clock::Duration> eta;  // from the rate objects came online so far
  uint64_t requests_sent = 0;
};
using ProgressFn = std::function<void(const StageProgress&)>;

enum class WaitEnd {
  kDone,      // every object readable
  kTimedOut,  // deadline passed with some not readable
  kFailed,    // some object failed for good (the rest may be readable)
};

class Stager {
 public:
  Stager(s3::ObjectStore& store, Ledger& ledger, std::string endpoint, std::string bucket,
         Clock& clock, StageOptions options);

  // Objects under the targets, in key order, each classified. Missing keys are kNotFound.
  Result<std::vector<StageObject>> Enumerate(const std::vector<StageTarget>& targets);
  // Indices into `objects` of what Submit would request, in submission order.
  static std::vector<size_t> Plan(const std::vector<StageObject>& objects);
  // Requests the planned objects; updates their state (staging) or error. Returns how many were
  // requested. A transport failure that stops everything is an error Status.
  Result<uint64_t> Submit(std::vector<StageObject>& objects, const ProgressFn& progress);
  // Polls until every object is readable, `deadline`, or a permanent failure; objects offline
  // with no request recorded count as failed ("not requested"). Updates states.
  Result<WaitEnd> Wait(std::vector<StageObject>& objects, Clock::TimePoint deadline,
                       const ProgressFn& progress);

 private:
  s3::ObjectStore& store_;
  Ledger& ledger_;
  const std::string endpoint_;
  const std::string bucket_;
  Clock& clock_;
  const StageOptions options_;
  Clock::TimePoint start_;
  uint64_t requests_sent_ = 0;
};

}  // namespace reelfs::hsm

// Ledger: the local record of restore requests, in SQLite (WAL mode, schema versioned), shared by
// the mount daemon and the `reelfs stage/status/wait` commands of the same user. It exists
// because servers do not all remember for us: versitygw answers 200 to every RestoreObject and
// never 409, and a HEAD of an object whose restore was just queued may not say "ongoing" yet.
// With the ledger, fifty readers and a `reelfs stage` of the same object send one request, and
// `reelfs status` can say "staging" for what this host asked for.
//
// An entry is keyed by (endpoint, bucket, key). Phases: requested (sent and accepted: 200, 202
// or 409), online (a later HEAD or GET found it readable), failed (the server refused for good,
// or the object came back offline too many times). Entries are never needed for correctness of
// data, only to avoid duplicate requests: a corrupt or missing database is recreated with a
// warning, never fatal.
//
// Default path: $REELFS_LEDGER if set, else $XDG_STATE_HOME/reelfs/ledger.sqlite, else
// ~/.local/state/reelfs/ledger.sqlite. The mount publishes the path it uses (user.reelfs.mount)
// so the CLI finds the same file.
//
// Thread-safety: all methods may be called concurrently from any thread (one connection behind a
// mutex); several processes may share the file (WAL, busy timeout 5 s). Calls do blocking disk
// I/O of a few hundred microseconds: fine on CLI and FUSE worker threads, not on the
// ObjectStore's event loop in bulk (batch with UpsertMany).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::hsm {

struct LedgerKey {
  std::string endpoint;  // the S3 endpoint URL as configured ("" = the SDK default)
  std::string bucket;
  std::string key;
  bool operator==(const LedgerKey&) const = default;
};

enum class LedgerPhase { kRequested, kOnline, kFailed };
std::string_view LedgerPhaseName(LedgerPhase phase);  // "requested", "online", "failed"

struct LedgerEntry {
  LedgerKey id;
  LedgerPhase phase = LedgerPhase::kRequested;
  std::string etag;  // of the object when requested (a new object under the key is not staged)
  uint64_t size = 0;
  s3::RestoreTier tier = s3::RestoreTier::kStandard;
  std::optional<int> days;
  s3::WallTime requested_at{};  // first request of the current attempt
  s3::WallTime updated_at{};
  int attempts = 1;        // requests sent for this object (re-requests after a release count)
  std::string batch;       // the `reelfs stage` run that asked, "" for the mount daemon
  std::string last_error;  // the Status text of the last failure, "" if none
};

class Ledger {
 public:
  // Opens or creates the database at `path` (parent directories created with mode 0700). A file
  // that is not a reelfs ledger, or has a newer schema, is an error; a corrupt one is moved
  // aside to PATH.corrupt-<time> and recreated with a warning.
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path);
  // An in-memory ledger (tests, or a mount started with --ledger=none).
  static std::unique_ptr<Ledger> InMemory();
  // The default path described above (never empty).
  static std::string DefaultPath();

  virtual ~Ledger() = default;
  virtual const std::string& path() const = 0;  // ":memory:" for InMemory

  // Inserts or replaces entries, in one transaction.
  [[nodiscard]] virtual Status UpsertMany(std::span<const LedgerEntry> entries) = 0;
  [[nodiscard]] Status Upsert(const LedgerEntry& entry) { return UpsertMany({&entry, 1}); }
  virtual Result<std::optional<LedgerEntry>> Find(const LedgerKey& id) = 0;
  // Every entry of (endpoint, bucket) whose key starts with `prefix`, in key order.
  virtual Result<std::vector<LedgerEntry>> FindPrefix(const std::string& endpoint,
                                                      const std::string& bucket,
                                                      const std::string& prefix) = 0;
  // Sets the phase (and last_error, updated_at = now) of an existing entry; no-op when absent.
  [[nodiscard]] virtual Status SetPhase(const LedgerKey& id, LedgerPhase phase,
                                        const std::string& error, s3::WallTime now) = 0;
  // Drops entries last updated before `cutoff`; returns how many.
  virtual Result<uint64_t> Prune(s3::WallTime cutoff) = 0;
};

}  // namespace reelfs::hsm

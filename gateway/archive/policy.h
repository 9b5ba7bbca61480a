// ArchivePolicy: the archive policy engine of a serving gateway (docs/gateway.md "Archive
// policy"). Every scan_interval it scans the catalog for each archive set's objects that are due
// (policy_batches.h), writes them to tape in batches through Archive::WriteBatch (the admin
// writer's own path: image copy, simulated drive write, commit only if unchanged), and releases the
// disk copies of the set's archived, never-restored objects older than release_after.
//
// Thread-safety: one thread (Start) runs the scans; ScanOnce may also be called by tests (scans
// are serialized). Stop (and the destructor) cancels a batch waiting for the library and joins the
// thread; nothing runs after it returns. Lock order: scan_mu_, then Archive's locks (WriteBatch).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "common/json.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "gateway/options.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {

class Archive;

struct PolicyScanReport {
  uint64_t due = 0;       // objects found due
  uint64_t batches = 0;   // batches handed to the writer
  uint64_t archived = 0;  // objects committed as premigrated
  uint64_t bytes = 0;
  uint64_t skipped = 0;   // changed or deleted between scan and commit: a later scan retakes them
  uint64_t released = 0;  // by release_after
  uint64_t errors = 0;
};

class ArchivePolicy {
 public:
  // `now_ns`: the wall clock (NowNs) or a test's fake; mtimes and archive times are compared
  // against it.
  ArchivePolicy(Archive& archive, Store& store, ArchivePolicyOptions options,
                std::function<int64_t()> now_ns);
  ~ArchivePolicy();  // Stop()
  ArchivePolicy(const ArchivePolicy&) = delete;
  ArchivePolicy& operator=(const ArchivePolicy&) = delete;

  // Starts the scanning thread (the first scan runs at once).
  void Start();
  // Idempotent; after it returns the engine does nothing more.
  void Stop();

  // One pass over every set; Cancelled when stopped meanwhile.
  [[nodiscard]] Result<PolicyScanReport> ScanOnce();

  // Counters since start, for GET /_reelfs/admin/metrics ("archive" -> "policy").
  Json MetricsDocument() const;

 private:
  Status ScanSet(const ArchiveSet& set, PolicyScanReport* report) REQUIRES(scan_mu_);
  Status ReleaseDue(const ArchiveSet& set, PolicyScanReport* report) REQUIRES(scan_mu_);
  void Loop();

  Archive& archive_;
  Store& store_;
  const ArchivePolicyOptions options_;
  const std::function<int64_t()> now_ns_;

  Mutex scan_mu_;  // one scan at a time (the thread, or a test)
  Mutex mu_;
  CondVar cv_;
  bool stop_requested_ GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_{false};  // read by WriteBatch while it waits for the library

  std::atomic<uint64_t> scans_{0}, due_{0}, batches_{0}, archived_{0}, bytes_{0}, skipped_{0},
      released_{0}, errors_{0};
  std::atomic<int64_t> last_scan_ns_{0};
  std::thread thread_;
};

}  // namespace reelfs::gateway

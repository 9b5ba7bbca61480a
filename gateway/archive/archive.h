// Archive: the gateway side of the tape archive. It owns the catalog's archive state and the
// bytes (tape images); tape::Library decides *when* a recall completes.
//
//   Run             archive writer: copies objects (key order or striped over N cartridges) into
//                   cartridge images, records the extents; optionally releases the disk copies.
//   WriteBatch      the writer's one step, shared by Run and the archive policy (policy.h): a
//                   batch of objects onto one cartridge, written by a simulated drive
//                   (tape::Library::SubmitWrite), committed only for objects that did not change.
//   Restore         starts one recall per object (a second request joins it); on kOk a copy
//                   thread (never the simulation thread) copies the extent back, verifies size and
//                   content MD5 and publishes it atomically; on a failure the object stays offline
//                   with StageFail set.
//   Release*        premigrated -> offline: by admin call, by expiry (aws/plain) and by the
//                   high/low watermarks on restored bytes (least recently restored first).
//
// Thread-safety: every public member may be called from any thread. Lock order: mu_, then a
// Store key stripe, then the Catalog mutex; the copy threads and the releaser take a key stripe
// (inside Store) without holding mu_. Library callbacks only enqueue.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "common/unique_fd.h"
#include "gateway/archive/policy.h"
#include "gateway/archive/tape_image.h"
#include "gateway/options.h"
#include "gateway/store/store.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway {

struct ArchiveRunOptions {
  std::string bucket;  // "" : every bucket
  std::string prefix;
  uint32_t cartridges = 1;  // spread over RL0000L9 .. RL{n-1}L9 (appended to when they exist)
  std::string cartridge;    // or exactly this volume serial
  bool striped = false;     // round-robin per object; false: contiguous key ranges per cartridge
  bool release = false;     // release the disk copies once archived
};

struct ArchiveRunReport {
  uint64_t archived = 0;
  uint64_t bytes = 0;
  uint64_t skipped = 0;  // already archived, empty objects and directory markers
  uint64_t released = 0;
  std::map<std::string, uint64_t> per_cartridge;  // objects written per cartridge
  std::vector<std::string> errors;                // "bucket/key: reason"
  std::string ToJson() const;
};

// An object the writer is to copy, as the scan saw it (the copy is committed only if it is still
// that object: size, mtime and ETag).
struct ArchiveCandidate {
  std::string bucket;
  ObjectRecord rec;
};

// Which process of a root this archive runs in (docs/gateway.md "Several front ends over one
// root"). kOwner: the one that runs the tape library, the copy threads, the releaser, the policy
// engine and every recall. kFrontEnd: Restore only records the request in the catalog (staging,
// Days) and wakes the owner, which submits the recall; nothing else runs.
enum class ArchiveRole { kOwner, kFrontEnd };

enum class RestoreStart {
  kNotArchived,  // no tape copy
  kOnDisk,       // archived and its bytes are on disk (premigrated): nothing to recall
  kStarted,      // a recall was submitted
  kJoined,       // a recall of this object was already running
};

class Archive {
 public:
  // `serve`: start the copy threads and the releaser, resubmit recalls left staging by a
  // previous run, register the known cartridges. The CLI's archive subcommand passes false.
  static Result<std::unique_ptr<Archive>> Create(Store& store, tape::Library& library,
                                                 ArchiveOptions options, bool serve,
                                                 ArchiveRole role = ArchiveRole::kOwner);
  ~Archive();
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  [[nodiscard]] Result<ArchiveRunReport> Run(const ArchiveRunOptions& run);

  // Appends `batch` to cartridge `vsn` at its end of data: each object still as scanned is copied
  // into the image (blocks spent first), one library write covers the batch's extent (mount,
  // position, stream, in simulated time), then each object is marked premigrated unless it
  // changed meanwhile (counted as skipped: a replaced object is taken by a later run). A failed
  // write commits nothing. `release` then releases the disk copies. `cancel` (may be null): give
  // up waiting for the library (shutdown); nothing of the batch is committed. Per-object errors go
  // to report->errors; the Status fails only when nothing could be attempted.
  [[nodiscard]] Status WriteBatch(const std::string& vsn,
                                  const std::vector<ArchiveCandidate>& batch, bool release,
                                  const std::atomic<bool>* cancel, ArchiveRunReport* report);

  // Releases one premigrated object (counted in the metrics); FailedPrecondition unless
  // premigrated. The policy's release_after uses it.
  [[nodiscard]] Status ReleaseOne(const std::string& bucket, const std::string& key,
                                  uint64_t bytes);

  // Starts or joins the recall of an offline object. `days`: the restored copy's expiry is
  // completion + days rounded up to midnight UTC; nullopt: no expiry. A request is "joined"
  // when the catalog already says staging, whichever process set it; on a front end "started"
  // means recorded for the owner (the recall runs once, in the owner).
  [[nodiscard]] Result<RestoreStart> Restore(const std::string& bucket, const std::string& key,
                                             std::optional<int> days);
  // A premigrated object's restore request (aws): sets restored_ns (if never) and the expiry.
  // Returns true when the object was already restored (only the expiry moved).
  [[nodiscard]] Result<bool> ExtendRestore(const std::string& bucket, const std::string& key,
                                           int days);

  // Admin: releases every premigrated object under bucket/prefix. Returns how many.
  [[nodiscard]] Result<uint64_t> ReleaseAll(const std::string& bucket, const std::string& prefix);
  // Watermarks, then expiry (aws/plain); the releaser thread calls it, tests may too.
  [[nodiscard]] Status RunReleaser();

  // Library faults, injected when the simulated clock reaches their time.
  void ScheduleFaults(std::vector<LibraryFault> faults);

  // Blocks until no recall is in flight or queued for copying, or `timeout` passed (tests).
  bool WaitIdle(std::chrono::milliseconds timeout);

  // The archive counters for GET /_reelfs/admin/metrics (docs/protocols/admin.md).
  Json MetricsDocument();
  const ArchiveOptions& options() const { return options_; }
  ArchiveRole role() const { return role_; }
  tape::Library& library() { return library_; }
  const TapeImages& images() const { return images_; }

 private:
  struct Job {
    std::string bucket;
    std::string key;
    tape::RecallCompletion completion;
  };
  Archive(Store& store, tape::Library& library, ArchiveOptions options, TapeImages images,
          ArchiveRole role)
      : store_(store),
        library_(library),
        options_(std::move(options)),
        images_(std::move(images)),
        role_(role) {}
  Status Start();
  // Front end: records the request in the catalog and wakes the owner.
  Result<RestoreStart> RequestRestore(const std::string& bucket, const std::string& key,
                                      std::optional<int> days);
  // Owner: submits every staging row no recall of this process covers (requests recorded by
  // front ends, and at start those a stopped owner left), woken through the request FIFO.
  void RequestLoop();
  // One pass of RequestLoop; returns how many recalls it submitted.
  Result<uint64_t> SubmitRequested(bool at_start);
  Status WriteBatchLocked(const std::string& vsn, const std::vector<ArchiveCandidate>& batch,
                          bool release, const std::atomic<bool>* cancel, ArchiveRunReport* report)
      REQUIRES(run_mu_);
  // Waits for a library write; Cancelled when `cancel` is set first.
  Result<tape::RecallCompletion> WriteOnTape(const tape::Extent& extent, const std::string& label,
                                             const std::atomic<bool>* cancel);
  // Hands the recall to the library; the caller registered it in inflight_.
  void Submit(const std::string& bucket, const std::string& key, const ArchiveRecord& a);
  void CopyLoop();
  void ReleaserLoop();
  void Complete(const Job& job);
  void Fail(const std::string& bucket, const std::string& key, const std::string& why);
  Result<uint64_t> ReleaseRows(const Catalog::ArchiveQuery& query, uint64_t stop_at_bytes,
                               uint64_t* bytes_left);

  // Library callbacks reach the archive through this gate: the library may outlive the archive
  // (its destructor fails what is left with kShutdown), so ~Archive closes it first.
  struct Gate {
    Mutex mu;
    Archive* archive = nullptr;  // GUARDED_BY(mu); null once closed
  };

  Store& store_;
  tape::Library& library_;
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  const ArchiveOptions options_;
  const TapeImages images_;
  const ArchiveRole role_;
  // Owner: the request FIFO (ROOT/.reelfs-gateway/recall-requests), opened O_RDWR so it never
  // reports EOF; front ends write one byte to it after recording a request.
  UniqueFd requests_fifo_;
  Mutex run_mu_;       // one archive run at a time (block allocation); taken before mu_
  Mutex releaser_mu_;  // one releaser pass at a time; taken before mu_ and key stripes

  Mutex mu_;
  CondVar cv_;                                      // jobs_ / stop_ / inflight_ changed
  std::set<std::string> inflight_ GUARDED_BY(mu_);  // "bucket/key" of each recall submitted here
  std::deque<Job> jobs_ GUARDED_BY(mu_);
  std::vector<LibraryFault> pending_faults_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  bool releaser_kick_ GUARDED_BY(mu_) = false;

  // Counters for /_reelfs/admin/metrics.
  std::atomic<uint64_t> archived_objects_{0}, archived_bytes_{0}, recalls_submitted_{0},
      recalls_joined_{0}, recalls_requested_{0}, recalls_ok_{0}, recalls_failed_{0},
      recalled_bytes_{0}, released_objects_{0}, released_bytes_{0}, faults_injected_{0},
      tape_writes_{0}, tape_writes_failed_{0}, tape_written_bytes_{0};

  std::vector<std::thread> threads_;  // copy threads and the releaser; joined in ~Archive
  // The archive policy engine (serve and archive sets configured); stopped first in ~Archive.
  std::unique_ptr<ArchivePolicy> policy_;
};

}  // namespace reelfs::gateway

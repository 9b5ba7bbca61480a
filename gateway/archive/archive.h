// Archive: the gateway side of the tape archive. It owns the catalog's archive state and the
// bytes (tape images); tape::Library decides *when* a recall completes.
//
//   Run             archive writer: copies objects (key order or striped over N cartridges) into
//                   cartridge images, records the extents; optionally releases the disk copies.
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
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
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
                                                 ArchiveOptions options, bool serve);
  ~Archive();
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  [[nodiscard]] Result<ArchiveRunReport> Run(const ArchiveRunOptions& run);

  // Starts or joins the recall of an offline object. `days`: the restored copy's expiry is
  // completion + days rounded up to midnight UTC; nullopt: no expiry.
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
  tape::Library& library() { return library_; }
  const TapeImages& images() const { return images_; }

 private:
  struct Recall {
    std::optional<int> days;  // of the request that started it
  };
  struct Job {
    std::string bucket;
    std::string key;
    tape::RecallCompletion completion;
  };
  Archive(Store& store, tape::Library& library, ArchiveOptions options, TapeImages images)
      : store_(store),
        library_(library),
        options_(std::move(options)),
        images_(std::move(images)) {}
  Status Start();
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
  Mutex run_mu_;       // one archive run at a time (block allocation); taken before mu_
  Mutex releaser_mu_;  // one releaser pass at a time; taken before mu_ and key stripes

  Mutex mu_;
  CondVar cv_;                                              // jobs_ / stop_ / inflight_ changed
  std::map<std::string, Recall> inflight_ GUARDED_BY(mu_);  // "bucket/key" -> its recall
  std::deque<Job> jobs_ GUARDED_BY(mu_);
  std::vector<LibraryFault> pending_faults_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  bool releaser_kick_ GUARDED_BY(mu_) = false;

  // Counters for /_reelfs/admin/metrics.
  std::atomic<uint64_t> archived_objects_{0}, archived_bytes_{0}, recalls_submitted_{0},
      recalls_joined_{0}, recalls_ok_{0}, recalls_failed_{0}, recalled_bytes_{0},
      released_objects_{0}, released_bytes_{0}, faults_injected_{0};

  std::vector<std::thread> threads_;  // copy threads and the releaser; joined in ~Archive
};

}  // namespace reelfs::gateway

// StaleUploadSweep: at mount start, aborts the multipart uploads under the mount's bucket/prefix
// that a writer killed mid-write left behind (docs/semantics.md "Writes", stale uploads).
//
// An upload is aborted only when it was initiated before `cutoff` (the mount's start minus
// --abort-stale-uploads): another host, or another mount of the same prefix, may be uploading
// right now, and its upload is younger than that. The server's Initiated time is compared with
// this host's clock, so the age must be well above any clock skew.
//
// The sweep runs on a thread of its own, with blocking calls on the store, so it never delays the
// mount; its outcome is logged (INFO with the count, DEBUG per key, WARN on a failure, which never
// fails the mount). Destruction asks it to stop after the request in flight and joins it, so the
// store must outlive it.
//
// Thread-safety: Start and the destructor from one thread; Run is the sweep's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

struct StaleUploadOptions {
  std::string bucket;
  std::string prefix;     // the mount's prefix ("" or ending in '/')
  s3::WallTime cutoff{};  // abort uploads initiated strictly before this
};

struct StaleUploadReport {
  uint64_t listed = 0;   // uploads seen under the prefix
  uint64_t aborted = 0;  // aborted (or already gone: NoSuchUpload)
  uint64_t kept = 0;     // initiated at or after the cutoff
  Status status;         // the first failure (listing or an abort); OK otherwise
};

// The sweep itself, synchronous: lists every page and aborts what is stale. `stop` (optional)
// is checked between requests. Never call from an ObjectStore callback.
StaleUploadReport SweepStaleUploads(s3::ObjectStore& store, const StaleUploadOptions& options,
                                    const std::atomic<bool>* stop = nullptr);

class StaleUploadSweep {
 public:
  // Starts SweepStaleUploads on a new thread and logs its report when it ends.
  static std::unique_ptr<StaleUploadSweep> Start(std::shared_ptr<s3::ObjectStore> store,
                                                 StaleUploadOptions options);
  StaleUploadSweep(const StaleUploadSweep&) = delete;
  StaleUploadSweep& operator=(const StaleUploadSweep&) = delete;
  ~StaleUploadSweep();

 private:
  StaleUploadSweep() = default;

  std::shared_ptr<s3::ObjectStore> store_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace reelfs::fuse

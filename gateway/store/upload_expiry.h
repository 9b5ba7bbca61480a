// UploadExpiry: the gateway's own expiry of stale multipart uploads (AWS's lifecycle rule
// AbortIncompleteMultipartUpload, always on). An upload initiated more than `expiry` ago is
// aborted: its catalog rows and part files go, one INFO line each, counted in
// Store::upload_expiry_stats() (admin metrics). The constructor sweeps once before returning
// (uploads left by an earlier run go before the gateway serves), then a thread sweeps every
// `interval` until destruction.
//
// Thread-safety: the sweeping thread is the only one touching the Store here; the Store is safe
// for concurrent use. The destructor stops and joins the thread.
#pragma once

#include <chrono>
#include <thread>

#include "common/mutex.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {

class UploadExpiry {
 public:
  // expiry > 0 (0 means never: do not create one).
  UploadExpiry(Store& store, std::chrono::nanoseconds expiry, std::chrono::nanoseconds interval);
  UploadExpiry(const UploadExpiry&) = delete;
  UploadExpiry& operator=(const UploadExpiry&) = delete;
  ~UploadExpiry();

  // How often to sweep for an expiry: a tenth of it, within [1 s, 1 h], so an upload outlives
  // its expiry by at most ~10 % (or an hour).
  static std::chrono::nanoseconds DefaultInterval(std::chrono::nanoseconds expiry);

  // One sweep now; returns how many uploads it aborted.
  size_t Sweep();

 private:
  void Run();

  Store& store_;
  const std::chrono::nanoseconds expiry_;
  const std::chrono::nanoseconds interval_;
  Mutex mu_;  // leaf lock
  CondVar wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started when everything above is ready
};

}  // namespace reelfs::gateway

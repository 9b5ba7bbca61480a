// MountStack: the objects of one `reelfs mount`, owned in one place so their teardown order is
// the compiler's reverse member destruction, on the error paths as on unmount. Build makes every
// object up to the FileSystem (nothing mounted yet), Mount adds the FUSE session, Serve runs it.
// Whatever step fails, the caller just returns: the destructor tears down what was built.
//
// Thread-safety: Build, Mount and Serve are called from one thread (the mount's main thread);
// the objects inside are used by FUSE, transport and timer threads while Serve runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/server/side_channel_server.h"
#include "cache/object_cache.h"
#include "cli/metrics_listener.h"
#include "cli/mount_gpu.h"
#include "cli/mount_options.h"
#include "cli/rdma_data_path.h"
#include "cli/s3_clients.h"
#include "common/result.h"
#include "common/timer.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/stale_uploads.h"
#include "fuse/lowlevel/daemon.h"
#include "hsm/ledger.h"
#include "hsm/restorer.h"

namespace reelfs::cli {

// Builds the S3 client (called once to check the bucket, and again in the daemon after fork,
// since a client's event-loop thread does not survive fork).
using ClientFactory = std::function<Result<S3Clients>()>;

class MountStack {
 public:
  // Builds the client from `make_clients`, then the memory budget, the RDMA path (cfg.rdma; when
  // it cannot be opened, a warning and reads over HTTP), the buffer pool, the ledger (an
  // in-memory one, with a warning, when the file cannot be opened), the timer, the Restorer and
  // the FileSystem. Fails only when the client cannot be built.
  static Result<std::unique_ptr<MountStack>> Build(const MountConfig& cfg,
                                                   const ClientFactory& make_clients);
  ~MountStack() = default;
  MountStack(const MountStack&) = delete;
  MountStack& operator=(const MountStack&) = delete;

  // Mounts the FileSystem at options.mountpoint (fuse::Daemon::Mount), then starts the side
  // channel server when the mount has a socket path, the background sweep of stale multipart
  // uploads (--abort-stale-uploads) on a writable mount, and the metrics listener
  // (--metrics-listen; a port that cannot be bound fails the mount).
  Status Mount(const fuse::DaemonOptions& options);
  // Serves until unmounted or signalled (after Mount), then logs the mount's counters. Reads
  // waiting for a restore are answered (EINTR) as soon as the loop ends.
  Status Serve();

  // The options the FileSystem runs with: cfg.mount plus the client's endpoint, the ledger path
  // opened and the offline wait capped below the kernel's request timeout.
  const fuse::MountOptions& mount() const { return mount_; }

  // What `reelfs mount --verbose` prints once mounted: the side channel's socket, the GPU probe
  // and the data path, one "name: value" line each.
  std::string VerboseSummary() const;

 private:
  // Holds the Restorer and shuts it down when let go (answers its waiters, stops its polls):
  // hsm/restorer.h wants Shutdown before the timer and the client go, and the FileSystem, which
  // shares it, is gone by then.
  struct ShutdownOnRelease {
    std::shared_ptr<hsm::Restorer> restorer;
    ShutdownOnRelease() = default;
    ShutdownOnRelease(const ShutdownOnRelease&) = delete;
    ShutdownOnRelease& operator=(const ShutdownOnRelease&) = delete;
    ~ShutdownOnRelease() {
      if (restorer != nullptr) restorer->Shutdown();
    }
  };

  MountStack() = default;
  void StartStaleUploadSweep();
  Status StartSideChannel(const fuse::DaemonOptions& options);
  Status StartMetrics();

  fuse::MountOptions mount_;                      // a value: no part in the teardown
  std::optional<ListenAddress> metrics_address_;  // --metrics-listen
  s3::WallTime started_{};  // when Build began: uploads initiated before it may be stale
  std::optional<unsigned> splice_max_read_;  // --splice-reads: the READ size its pipes hold

  // Declaration order is construction order, so destruction is the teardown order; do not
  // reorder. Each member outlives every one below it:
  //   gpu_      the CudaApi the probe used (and what later lands bytes in GPU memory): last;
  //   s3_       the client: what is still in flight completes with kCancelled when it goes, so
  //             everything that sends through it (the RDMA control plane, the Restorer, the
  //             FileSystem) goes first;
  //   stale_uploads_ the sweep of uploads killed writers left (joined when it goes: it uses s3_);
  //   budget_   counts the FileSystem's prefetch buffers;
  //   rdma_     the channels and their QPs: after the FileSystem (no prefetcher left to fetch
  //             through them) and the pool, whose registered buffers keep the registrar;
  //   pool_     the prefetch buffers the FileSystem reads into;
  //   cache_    the local object cache (--cache): its caching store goes with the FileSystem,
  //             and the cache itself (its lock on the directory) after it;
  //   ledger_   the Restorer records its requests in it;
  //   timer_    the Restorer's polls run on it;
  //   restorer_ shut down before the timer and the client it uses, after the FileSystem whose
  //             reads wait on it;
  //   fs_       cancels its prefetches when it goes, after the session;
  //   daemon_   the FUSE session: unmounts after the side channel;
  //   gpu_importer_ opens CUDA IPC buffers for the side channel (over gpu_ and rdma_): after it;
  //   side_channel_ the side channel server (started by Mount, stopped by Serve once the loop
  //             has ended): its reads go through fs_, so it goes after the listener;
  //   metrics_  the --metrics-listen thread reads every member above: it goes first.
  MountGpu gpu_;
  S3Clients s3_;
  std::unique_ptr<fuse::StaleUploadSweep> stale_uploads_;  // started by Mount; stops before s3_
  std::shared_ptr<fuse::MemoryBudget> budget_;
  RdmaDataPath rdma_;
  std::shared_ptr<fuse::BufferPool> pool_;
  std::shared_ptr<cache::ObjectCache> cache_;
  std::shared_ptr<hsm::Ledger> ledger_;
  std::unique_ptr<Timer> timer_;
  ShutdownOnRelease restorer_;
  std::unique_ptr<fuse::FileSystem> fs_;
  std::unique_ptr<fuse::Daemon> daemon_;
  std::unique_ptr<api::GpuImporter> gpu_importer_;  // the side channel's CUDA IPC buffers
  std::unique_ptr<api::SideChannelServer> side_channel_;
  std::unique_ptr<MetricsListener> metrics_;
};

}  // namespace reelfs::cli

// MountMetricsText: the mount daemon's Prometheus text exposition for `--metrics-listen`: FUSE
// requests by operation with latency histograms (fuse/lowlevel/op_stats.h), the file system's
// counters (lookups, listings, HEADs, bytes read and written, uploads, offline reads, restore
// waits), the S3 client's requests, retries, failures and bytes, labelled by endpoint, the data
// path's bytes over RDMA and over HTTP per endpoint and transport, the prefetch memory budget and
// buffer pool, the tape restorer's requests and waiters, and the side channel's reads. Every
// name starts with reelfs_; docs/operations.md lists them.
//
// Thread-safety: reads atomics and counters() snapshots only; call from any thread while the
// sources live.
#pragma once

#include <functional>
#include <string>

#include "api/server/side_channel_server.h"
#include "common/json.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/lowlevel/daemon.h"
#include "hsm/restorer.h"
#include "s3/client/s3_client.h"

namespace reelfs::cli {

// What the exposition reads; a null pointer leaves its families out.
struct MountMetricsSources {
  const fuse::Daemon* daemon = nullptr;
  const fuse::FileSystem* fs = nullptr;
  const s3::S3Client* client = nullptr;
  const fuse::MemoryBudget* budget = nullptr;
  const fuse::BufferPool* pool = nullptr;
  const hsm::Restorer* restorer = nullptr;
  const api::SideChannelServer* side_channel = nullptr;
  // The data path's channels as RdmaDataPath::metrics_json writes them (an array of objects
  // with endpoint, transport, rdma_bytes, http_bytes, ...); unset or null: no RDMA families.
  std::function<Json()> data_path_json;
};

std::string MountMetricsText(const MountMetricsSources& sources);

}  // namespace reelfs::cli

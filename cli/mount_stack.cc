#include "cli/mount_stack.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

#include <sys/statvfs.h>

#include "cache/caching_store.h"
#include "cli/mount_metrics.h"
#include "cli/rdma_open.h"
#include "cli/side_channel_path.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pipe.h"
#include "common/units.h"
#include "cuda/pinning_registrar.h"
#include "fuse/core/caching_channel.h"
#include "fuse/lowlevel/mount_tuning.h"

namespace reelfs::cli {
namespace {

constexpr std::string_view kSubject = "fuse";

// The restore ledger named by --ledger: "" the default path, "none" in memory. A ledger only saves
// duplicate restore requests, so one that cannot be opened costs a warning, never the mount.
std::shared_ptr<hsm::Ledger> OpenLedger(const std::string& flag) {
  if (flag == "none") return hsm::Ledger::InMemory();
  const std::string path = flag.empty() ? hsm::Ledger::DefaultPath() : flag;
  auto ledger = hsm::Ledger::Open(path);
  if (!ledger.ok()) {
    REELFS_LOG_WARN(kSubject, "restore ledger {}: {}; using an in-memory ledger", path,
                    ledger.status().ToString());
    return hsm::Ledger::InMemory();
  }
  return std::shared_ptr<hsm::Ledger>(std::move(*ledger));
}

// A read waiting for a restore must be answered before the kernel's FUSE request timeout, which
// would abort the whole connection (docs/semantics.md "Offline objects").
void CapOfflineWait(fuse::TapeOptions& tape) {
  const std::optional<std::chrono::seconds> kernel = fuse::KernelRequestTimeout();
  const std::chrono::seconds capped = fuse::CapBelowRequestTimeout(tape.offline_wait, kernel);
  if (capped != tape.offline_wait) {
    REELFS_LOG_WARN(kSubject,
                    "the kernel aborts FUSE requests after {}s (fs.fuse.*_request_timeout): "
                    "--offline-timeout lowered from {}s to {}s",
                    kernel->count(), tape.offline_wait.count(), capped.count());
    tape.offline_wait = capped;
  }
}

// Spliced reads: the client's receiver of GET bodies left in their sockets, or nullptr where they
// are off. A spliced READ needs pipes that hold its bytes twice over (a socket's bytes fill pipe
// slots partly): here, and in libfuse, which otherwise copies (still correct, no faster). Above
// /proc/sys/fs/pipe-max-size that takes CAP_SYS_RESOURCE: --splice-reads caps READs at half of
// what a pipe can be made to hold; the default (kAuto) splices only where that is the mount's
// max_read (1 MiB), so that it never shrinks the READs of readers it does not splice.
std::shared_ptr<s3::BodySource> SpliceSource(const s3::S3Client& client, SpliceMode mode,
                                             bool cache_or_rdma, unsigned* max_read) {
  if (mode == SpliceMode::kOff) return nullptr;
  if (mode == SpliceMode::kAuto && cache_or_rdma) return nullptr;  // they must see the bytes
  // Several front ends: a handle's part GETs spread over them, where one stream would hold a
  // reader to one of them.
  if (mode == SpliceMode::kAuto && client.endpoint_stats().size() > 1) return nullptr;
  std::shared_ptr<s3::BodySource> source = client.CreateBodySource();
  if (source == nullptr) {
    if (mode == SpliceMode::kOn) {
      REELFS_LOG_WARN(kSubject,
                      "--splice-reads: an https endpoint (a TLS body cannot be spliced from its "
                      "socket) or a proxy for libcurl (http_proxy, all_proxy); reads are copied "
                      "as usual");
    }
    return nullptr;
  }
  const auto largest = static_cast<unsigned>(LargestPipeCapacity(64u << 10, 2u << 20));
  const std::string hint =
      largest < (2u << 20)
          ? " (pipes over /proc/sys/fs/pipe-max-size need CAP_SYS_RESOURCE; a pipe-max-size of "
            "2097152 gives 1 MiB READs)"
          : "";
  if (mode == SpliceMode::kAuto && largest / 2 < *max_read) {
    // Halving every READ of the mount costs the readers that go one READ at a time (O_DIRECT)
    // more than splicing gives the others (bench/RESULTS.md "Spliced reads by default").
    REELFS_LOG_INFO(kSubject,
                    "spliced reads off: pipes of {} KiB would hold READs of {} KiB, not {} "
                    "(--splice-reads turns them on with the smaller READs){}",
                    largest >> 10, largest >> 11, *max_read >> 10, hint);
    return nullptr;
  }
  *max_read = std::clamp(largest / 2, 64u << 10, *max_read);
  REELFS_LOG_INFO(kSubject,
                  "spliced reads on: large sequential reads go socket -> pipe -> kernel "
                  "(READs of up to {} KiB: pipes of {} KiB){}",
                  *max_read >> 10, largest >> 10, hint);
  return source;
}

// --cache: whether READs of whole cached objects the kernel does not read itself (no passthrough)
// are answered with the cache's file for libfuse to splice (fuse/core/cached_file_reads.h). Its
// pipe must hold a whole reply (a READ, the header, a few pages of slack), else libfuse copies
// through a buffer of its own per READ, slower than the daemon's own path. A file's pages fill
// their slots, so a pipe of 2 MiB holds a 1 MiB READ.
bool SpliceCachedFiles(SpliceMode mode, unsigned max_read) {
  if (mode == SpliceMode::kOff) return false;
  const size_t need = size_t{max_read} + (16u << 10);
  const size_t largest = LargestPipeCapacity(64u << 10, 4u << 20);
  if (largest < need) {
    REELFS_LOG_INFO(kSubject,
                    "cached files the kernel does not read itself (no passthrough) are copied by "
                    "the daemon: pipes of {} KiB cannot hold a {} KiB READ (a pipe-max-size of {} "
                    "lets them be spliced from the cache's file)",
                    largest >> 10, max_read >> 10, std::bit_ceil(need));
    return false;
  }
  REELFS_LOG_INFO(kSubject,
                  "cached files are spliced from the cache's file where the kernel does not read "
                  "it itself (pipes of {} KiB)",
                  largest >> 10);
  return true;
}

// Registered buffers when there is an RDMA channel to register them with, else plain heap.
// With --cuda-pin and a usable GPU every prefetch buffer is also pinned for CUDA
// (cuda/pinning_registrar.h), in front of the RDMA registration when there is one.
std::shared_ptr<fuse::BufferPool> CreatePool(const RdmaDataPath& rdma, uint64_t max_memory,
                                             bool cuda_pin, const MountGpu& gpu) {
  std::shared_ptr<rdmaio::MemoryRegistrar> registrar = ChannelRegistrar(rdma);
  if (registrar != nullptr) WarnIfMemlockLow(max_memory);
  if (cuda_pin && !gpu.probe.usable()) {
    REELFS_LOG_WARN(kSubject, "--cuda-pin: {}; prefetch buffers stay pageable",
                    cuda::Summary(gpu.probe));
  } else if (cuda_pin) {
    registrar = std::make_shared<cuda::PinningRegistrar>(*gpu.api, std::move(registrar));
    REELFS_LOG_INFO(kSubject, "--cuda-pin: prefetch buffers are pinned for CUDA as allocated");
  }
  if (registrar == nullptr) return fuse::CreateHeapBufferPool(max_memory);
  return fuse::CreateRegisteredBufferPool(std::move(registrar), max_memory);
}

// --cache DIR: the limit and the floor not given are taken from the file system DIR is on.
Result<std::shared_ptr<cache::ObjectCache>> OpenMountCache(const CacheConfig& cfg) {
  std::error_code ec;
  std::filesystem::create_directories(cfg.dir, ec);
  if (ec) {
    return Status::FailedPrecondition(
        fmt::format("--cache {}: cannot create it: {}", cfg.dir, ec.message()));
  }
  struct statvfs fs {};
  if (::statvfs(cfg.dir.c_str(), &fs) != 0) {
    return ErrnoToStatus(errno, fmt::format("--cache {}", cfg.dir));
  }
  cache::CacheOptions options;
  const uint64_t fs_bytes = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
  // mountpoint-s3's default: keep 5% of the file system free, no other limit.
  options.min_free_bytes = cfg.min_free_bytes.value_or(fs_bytes / 20);
  options.max_bytes = cfg.max_bytes.value_or(fs_bytes);
  auto opened = cache::ObjectCache::Open(cfg.dir, options);
  if (!opened.ok()) return opened.status().WithContext("--cache");
  return opened;
}

}  // namespace

Result<std::unique_ptr<MountStack>> MountStack::Build(const MountConfig& cfg,
                                                      const ClientFactory& make_clients) {
  std::unique_ptr<MountStack> stack(new MountStack());
  stack->started_ = std::chrono::system_clock::now();
  // Build runs in the daemon, after the fork: the first CUDA call may happen here.
  stack->gpu_ = ProbeMountGpu();
  REELFS_LOG_INFO(kSubject, "gpu: {}", cuda::Summary(stack->gpu_.probe));
  REELFS_ASSIGN_OR_RETURN(stack->s3_, make_clients());
  stack->budget_ = std::make_shared<fuse::MemoryBudget>(cfg.mount.max_memory);
  // Empty when rdma-core is not built in (RunMount refused the flag then) or no port is usable.
  if (cfg.rdma.enabled) {
    stack->rdma_ = OpenRdmaOrWarn(cfg.rdma, stack->s3_, kSubject, "reading over HTTP");
  }
  stack->pool_ = CreatePool(stack->rdma_, cfg.mount.max_memory, cfg.cuda_pin, stack->gpu_);

  fuse::MountOptions& mount = stack->mount_;
  mount = cfg.mount;
  // The endpoint URL the client really sends to (what the ledger keys on and what
  // user.reelfs.mount tells `reelfs stage`): "" when it is AWS's default for the region.
  mount.endpoint = stack->s3_.client->options().endpoint;
  stack->ledger_ = OpenLedger(cfg.mount.ledger_path);
  mount.ledger_path = stack->ledger_->path();
  mount.gpu = cuda::Summary(stack->gpu_.probe);
  CapOfflineWait(mount.tape);
  stack->timer_ = CreateRealTimer(RealClock(), "reelfs-restore");
  hsm::RestorerOptions restorer_options = cfg.restorer;
  restorer_options.endpoint = mount.endpoint;
  restorer_options.bucket = mount.bucket;
  stack->restorer_.restorer = hsm::Restorer::Create(stack->s3_.store, stack->ledger_,
                                                    *stack->timer_, std::move(restorer_options));
  // The socket is announced only where its directory is usable; the server starts in Mount.
  if (!mount.side_channel_path.empty()) {
    if (Status dir = PrepareSocketDirectory(mount.side_channel_path, cfg.daemon.allow_other);
        !dir.ok()) {
      REELFS_LOG_WARN(kSubject, "--side-channel: {}; mounting without the side channel",
                      dir.ToString());
      mount.side_channel_path.clear();
    }
  }
  fuse::DataPath data_path{stack->rdma_.channel, stack->rdma_.metrics_json};
  data_path.endpoints_json = [client = stack->s3_.client.get()] {
    Json out = Json::array();
    for (const s3::EndpointStats& e : client->endpoint_stats()) {
      out.push_back({{"endpoint", e.url},
                     {"state", e.up ? "up" : "down"},
                     {"requests", e.requests},
                     {"bytes", e.bytes},
                     {"errors", e.errors},
                     {"downs", e.downs},
                     {"probes", e.probes},
                     {"in_flight", e.in_flight}});
    }
    return out;
  };
  {
    unsigned max_read = cfg.daemon.max_read;
    data_path.body_source =
        SpliceSource(*stack->s3_.client, cfg.splice,
                     !cfg.cache.dir.empty() || data_path.channel != nullptr, &max_read);
    if (data_path.body_source != nullptr) stack->splice_max_read_ = max_read;
    // A stalled spliced stream fails after the same silence as any of the client's transfers.
    mount.splice.idle_timeout = stack->s3_.client->options().idle_timeout;
  }
  // The local cache: refusing the mount (its directory unusable or another mount's) is the
  // clear answer; reads then go through the caching decorator, everything else straight on.
  std::shared_ptr<s3::ObjectStore> fs_store = stack->s3_.store;
  if (!cfg.cache.dir.empty()) {
    REELFS_ASSIGN_OR_RETURN(stack->cache_, OpenMountCache(cfg.cache));
    mount.cache_dir = cfg.cache.dir;
    fs_store = cache::CreateCachingStore(fs_store, stack->cache_);
    data_path.cache = stack->cache_;
    mount.splice_cached_files = SpliceCachedFiles(cfg.splice, cfg.daemon.max_read);
    // --rdma reads and side-channel READs into registered buffers fill the cache too.
    if (data_path.channel != nullptr) {
      data_path.channel = fuse::CreateCachingChannel(data_path.channel, stack->cache_);
    }
  }
  // Read by FUSE threads only while the loop runs, after Mount set it and before Serve resets
  // it, so the pointer needs no lock.
  data_path.side_channel_json = [s = stack.get()] {
    return s->side_channel_ != nullptr ? s->side_channel_->CountersJson() : Json();
  };
  stack->fs_ = fuse::CreateFileSystem(std::move(fs_store), mount, stack->pool_, stack->budget_,
                                      RealClock(), stack->restorer_.restorer, std::move(data_path));
  stack->metrics_address_ = cfg.metrics_listen;
  return stack;
}

std::string MountStack::VerboseSummary() const {
  std::string out =
      "side channel: " + (mount_.side_channel_path.empty() ? "off" : mount_.side_channel_path) +
      "\n";
  out += "gpu: " + mount_.gpu + "\n";
  out += "data path: " + (rdma_.log_line ? "rdma (" + rdma_.log_line() + ")" : "http") + "\n";
  if (metrics_ != nullptr) out += "metrics: http://" + metrics_->bound() + "/metrics\n";
  return out;
}

Status MountStack::Mount(const fuse::DaemonOptions& given) {
  fuse::DaemonOptions options = given;
  if (splice_max_read_) options.max_read = *splice_max_read_;
  REELFS_ASSIGN_OR_RETURN(daemon_, fuse::Daemon::Mount(*fs_, options));
  StartStaleUploadSweep();
  REELFS_RETURN_IF_ERROR(StartSideChannel(options));
  return StartMetrics();
}

Status MountStack::StartMetrics() {
  if (!metrics_address_) return Status::Ok();
  MountMetricsSources sources{.daemon = daemon_.get(),
                              .fs = fs_.get(),
                              .client = s3_.client.get(),
                              .budget = budget_.get(),
                              .pool = pool_.get(),
                              .restorer = restorer_.restorer.get(),
                              .side_channel = side_channel_.get(),
                              .data_path_json = rdma_.metrics_json};
  REELFS_ASSIGN_OR_RETURN(metrics_, MetricsListener::Start(*metrics_address_, [sources] {
                            return MountMetricsText(sources);
                          }));
  REELFS_LOG_INFO(kSubject, "metrics: serving http://{}/metrics", metrics_->bound());
  return Status::Ok();
}

Status MountStack::StartSideChannel(const fuse::DaemonOptions& options) {
  if (mount_.side_channel_path.empty()) return Status::Ok();
  // The mount's device from /proc/self/mountinfo: a stat of the mountpoint would wait for this
  // very daemon, whose loop is not running yet.
  auto dev = fuse::MountDeviceNumber(options.mountpoint);
  if (!dev.ok()) return dev.status().WithContext("side channel");
  api::ServerOptions server;
  server.socket_path = mount_.side_channel_path;
  server.mount_dev = *dev;
  server.allow_other = options.allow_other;
  server.data_path =
      rdma_.channel != nullptr ? api::protocol::DonePath::kRdma : api::protocol::DonePath::kHttp;
  // With --rdma each client memfd is registered with the channel, and large READs are fetched
  // straight into it (the gateway writes them; nothing is copied by the daemon).
  if (rdma_.channel != nullptr) server.registrar = &rdma_.channel->registrar();
  // dma-bufs are always taken: the daemon walks its ladder per buffer (docs/gpu.md). CUDA IPC
  // handles are offered where a GPU and --rdma let the NIC write them, and answered with the
  // reason elsewhere.
  gpu_importer_ = MakeGpuImporter(gpu_, server.registrar);
  server.gpu_importer = gpu_importer_.get();
  using api::protocol::capability::kCudaIpc, api::protocol::capability::kDmaBuf,
      api::protocol::capability::kRdma;
  server.capabilities =
      kDmaBuf | (rdma_.channel != nullptr ? kRdma : 0) |
      (gpu_importer_ != nullptr && gpu_.probe.usable() && rdma_.channel != nullptr ? kCudaIpc : 0);
  REELFS_ASSIGN_OR_RETURN(side_channel_, api::SideChannelServer::Start(*fs_, std::move(server)));
  REELFS_LOG_INFO(kSubject, "side channel: listening on {}", side_channel_->socket_path());
  return Status::Ok();
}

void MountStack::StartStaleUploadSweep() {
  const std::chrono::seconds age = mount_.write.abort_stale_uploads;
  if (mount_.write.read_only || age.count() == 0) return;
  // Only uploads from before this mount started, and older than the age then: a younger one may
  // be another host's write in progress.
  stale_uploads_ = fuse::StaleUploadSweep::Start(
      s3_.store, fuse::StaleUploadOptions{mount_.bucket, mount_.prefix, started_ - age});
}

Status MountStack::Serve() {
  hsm::Restorer& restorer = *restorer_.restorer;
  // Reads waiting for a restore are answered (EINTR) as soon as the loop ends, so an unmount
  // does not wait out the drain for them.
  Status run = daemon_->Run([&restorer] { restorer.Shutdown(); });
  metrics_.reset();  // it reads the side channel, which goes next
  if (side_channel_ != nullptr) {
    const api::ServerCounters sc = side_channel_->counters();
    // Disconnects every client (fenced) and waits for their reads before the FileSystem goes.
    side_channel_.reset();
    REELFS_LOG_INFO(kSubject,
                    "side channel: clients={} requests={} reads={} read_errors={} bytes_read={} "
                    "files_refused={} protocol_errors={}",
                    sc.clients_accepted, sc.requests, sc.reads, sc.read_errors, sc.bytes_read,
                    sc.files_refused, sc.protocol_errors);
  }
  const fuse::FsCounters c = fs_->counters();
  REELFS_LOG_INFO(kSubject,
                  "unmounted {}: lookups={} list_requests={} head_requests={} open_handles={} "
                  "inodes={} bytes_read={} peak_prefetch_memory={} fresh_buffers={}",
                  daemon_->options().mountpoint, c.lookups, c.list_requests, c.head_requests,
                  c.open_handles, c.inodes, c.bytes_read, FormatByteSize(budget_->peak()),
                  pool_->stats().fresh_allocations);
  const hsm::RestorerCounters rc = restorer.counters();
  REELFS_LOG_INFO(kSubject,
                  "tape: offline_reads={} restore_waits={} xattr_refreshes={} "
                  "restore_requests={} restore_heads={} restore_waiters={} completed={} "
                  "re_requests={} failures={}",
                  c.offline_reads, c.restore_waits, c.xattr_refreshes, rc.restore_requests,
                  rc.head_requests, rc.waiters, rc.completed, rc.re_requests, rc.failures);
  for (const s3::EndpointStats& e : s3_.client->endpoint_stats()) {
    REELFS_LOG_INFO(kSubject,
                    "endpoint {}: state={} requests={} bytes={} errors={} downs={} probes={}",
                    e.url, e.up ? "up" : "down", e.requests, e.bytes, e.errors, e.downs, e.probes);
  }
  if (rdma_.log_line) {
    REELFS_LOG_INFO(kSubject, "rdma: {} registration_failures={}", rdma_.log_line(),
                    pool_->stats().registration_failures);
  }
  return run;
}

}  // namespace reelfs::cli

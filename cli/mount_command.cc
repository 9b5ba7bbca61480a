#include "cli/mount_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/units.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/lowlevel/daemon.h"
#include "fuse/lowlevel/mount_tuning.h"
#include "hsm/ledger.h"
#include "hsm/restorer.h"
#include "s3/await.h"
#include "s3/client/s3_client.h"

// REELFS_HAVE_RDMA: cli/CMakeLists.txt sets it where rdmaio/verbs (rdma-core) was built.
#if REELFS_HAVE_RDMA
#include <fmt/format.h>

#include "rdmaio/channel/dc_channel.h"
#include "rdmaio/channel/rc_channel.h"
#include "rdmaio/channel/transport_router.h"
#include "rdmaio/s3bridge/s3_control_plane.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/mlx_dc_target.h"
#include "rdmaio/verbs/verbs_qp_provider.h"
#endif

namespace reelfs::cli {
namespace {

constexpr std::string_view kSubject = "fuse";
constexpr std::string_view kMountedToken = "mounted";

// One ListObjectsV2 (max-keys=1) under the prefix: proves endpoint, bucket and keys before the
// mount exists, so a typo fails here with a message instead of as EIO on every file.
Status CheckBucket(s3::ObjectStore& store, const fuse::MountOptions& m) {
  s3::ListObjectsRequest req;
  req.bucket = m.bucket;
  req.prefix = m.prefix;
  req.delimiter = "/";
  req.max_keys = 1;
  return s3::Await<s3::ListObjectsPage>([&](auto cb) { store.ListObjects(req, cb); }).status();
}

bool IsCredentialError(const Status& s) {
  return s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kUnauthenticated;
}

// Where the daemon reports "mounted" or its error: the parent's pipe, or stderr in the foreground.
class Notifier {
 public:
  explicit Notifier(int fd) : fd_(fd) {}
  ~Notifier() { Close(); }
  void Mounted() { Send(kMountedToken); }
  void Failed(std::string_view message) {
    REELFS_LOG_ERROR(kSubject, "{}", message);
    if (fd_ < 0) {
      std::cerr << "reelfs mount: " << message << "\n";
    } else {
      Send(message);
    }
  }

 private:
  void Send(std::string_view text) {
    if (fd_ < 0) return;
    while (!text.empty()) {
      ssize_t n = write(fd_, text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.remove_prefix(static_cast<size_t>(n));
    }
    Close();
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_;
};

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

// The endpoint URL the client really sends to (what the ledger keys on and what
// user.reelfs.mount tells `reelfs stage`): "" when it is AWS's default for the region.
std::string ClientEndpoint(const s3::ObjectStore& store) {
  if (const auto* client = dynamic_cast<const s3::S3Client*>(&store)) {
    return client->options().endpoint;
  }
  return "";
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

// The mount's RDMA data path (--rdma): the channel the prefetchers read through and its counters
// for user.reelfs.metrics and the unmount log. Empty without --rdma, or when no RDMA port is
// usable (reads then go over HTTP, as without the flag).
struct RdmaPath {
  std::shared_ptr<rdmaio::DataChannel> channel;
  std::function<Json()> metrics_json;  // an array, one object per endpoint; null: none left
  std::function<std::string()> log_line;
};

// Registration pins pages: every prefetch buffer counts against RLIMIT_MEMLOCK unless we may
// exceed it (root, CAP_IPC_LOCK). Over the limit a buffer stays unregistered and is read over
// HTTP, which works but is not what --rdma asked for: say so once, up front.
void WarnIfMemlockLow(uint64_t max_memory) {
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (geteuid() == 0 || limit.rlim_cur >= max_memory) return;
  REELFS_LOG_WARN(kSubject,
                  "--rdma: RLIMIT_MEMLOCK is {} but --max-memory is {}: buffers past the limit "
                  "cannot be registered and are read over HTTP (raise it with ulimit -l)",
                  FormatByteSize(limit.rlim_cur), FormatByteSize(max_memory));
}

#if REELFS_HAVE_RDMA
constexpr bool kBuiltWithRdma = true;

Json CountersJson(const rdmaio::ChannelCounters& c) {
  return Json{{"endpoint", c.endpoint},
              {"transport", c.transport},
              {"rdma_requests", c.rdma_requests},
              {"rdma_bytes", c.rdma_bytes},
              {"http_requests", c.http_requests},
              {"http_bytes", c.http_bytes},
              {"fallbacks", c.fallbacks},
              {"sessions_opened", c.sessions_opened},
              {"sessions_fenced", c.sessions_fenced},
              {"failed", c.failed}};
}

std::string CountersLine(const rdmaio::ChannelCounters& n) {
  return fmt::format(
      "endpoint={} transport={} rdma_requests={} rdma_bytes={} http_requests={} http_bytes={} "
      "fallbacks={} sessions_opened={} sessions_fenced={} failed={}",
      n.endpoint, n.transport, n.rdma_requests, n.rdma_bytes, n.http_requests, n.http_bytes,
      n.fallbacks, n.sessions_opened, n.sessions_fenced, n.failed);
}

// The DC target provider for `where` on `pd`, or why there is none ("rxe0 cannot do DC: not an
// mlx5 (ConnectX) device; ...", "built without mlx5dv").
Result<std::shared_ptr<rdmaio::verbs::MlxDcTargetProvider>> OpenDc(
    const std::shared_ptr<rdmaio::verbs::ProtectionDomain>& pd,
    const rdmaio::verbs::DevicePort& where) {
  return rdmaio::verbs::MlxDcTargetProvider::Create(pd, where);
}

// Whether `--rdma-transport=dc` can have DC on the configured device: probed on the user's
// terminal before the daemon starts (the daemon probes again and logs it).
Status ProbeDc(const RdmaConfig& rdma) {
  REELFS_ASSIGN_OR_RETURN(rdmaio::verbs::DevicePort where,
                          rdmaio::verbs::FindActivePort(rdma.device));
  REELFS_ASSIGN_OR_RETURN(auto pd, rdmaio::verbs::ProtectionDomain::Open(where));
  return OpenDc(pd, where).status();
}

// Builds the mount's RDMA channel over its own S3 client: data GETs share its connections,
// signing and retries (s3bridge), control POSTs use the same endpoint and credentials. Which
// transport (docs/protocols/rdma-dc.md "Choosing the transport"):
//   rc    RcChannel (hipobj-rc-v2);
//   dc    DcChannel (cuObject DC v1); when the device cannot do DC, a warning and RcChannel;
//   auto  RcChannel, plus a DcChannel when the device can do DC, behind a TransportRouter that
//         sends fetches to DC once the endpoint has declined hipobj-rc-v2 (a cuObject server
//         answers the PREPARE POST as plain S3). Both channels share one protection domain, so
//         every buffer registered through RC's registrar can be named in a DC token.
RdmaPath OpenRdmaPath(const RdmaConfig& rdma, const std::shared_ptr<s3::ObjectStore>& store) {
  namespace channel = rdmaio::channel;
  namespace verbs = rdmaio::verbs;
  auto warn = [](const std::string& why) {
    REELFS_LOG_WARN(kSubject, "--rdma: {}; reading over HTTP", why);
    return RdmaPath{};
  };
  const auto* client = dynamic_cast<const s3::S3Client*>(store.get());
  if (client == nullptr) return warn("the object store is not an S3 client");
  Result<verbs::DevicePort> where = verbs::FindActivePort(rdma.device);
  if (!where.ok()) return warn(where.status().ToString());
  auto pd = verbs::ProtectionDomain::Open(*where);
  if (!pd.ok()) return warn(pd.status().ToString());
  auto control = rdmaio::s3bridge::S3ControlPlane::Create(store, client->options());
  if (!control.ok()) return warn(control.status().ToString());
  std::shared_ptr<rdmaio::ControlPlane> plane = std::move(control).value();

  std::shared_ptr<channel::DcChannel> dc;
  if (rdma.transport != RdmaTransport::kRc) {
    auto provider = OpenDc(*pd, *where);
    if (provider.ok()) {
      dc = channel::DcChannel::Create(plane, std::move(provider).value(), RealClock(),
                                      {.max_targets = rdma.sessions});
    } else if (rdma.transport == RdmaTransport::kDc) {
      REELFS_LOG_WARN(kSubject, "--rdma-transport=dc: {}; using RC", provider.status().message());
    } else {
      REELFS_LOG_INFO(kSubject, "--rdma-transport=auto: no DC ({}); RC only",
                      provider.status().message());
    }
  }
  std::shared_ptr<channel::RcChannel> rc;
  if (rdma.transport != RdmaTransport::kDc || dc == nullptr) {
    auto qps = std::make_shared<verbs::VerbsQpProvider>(*pd, where->port);
    rc = channel::RcChannel::Create(plane, std::move(qps), RealClock(),
                                    {.max_sessions = rdma.sessions});
  }

  RdmaPath path;
  // Weak: the FileSystem holding these must not keep the channels (and their QPs) alive.
  std::vector<std::function<std::optional<rdmaio::ChannelCounters>()>> counters;
  if (rc != nullptr && dc != nullptr) {
    const std::string endpoint = plane->endpoint();
    path.channel = std::make_shared<channel::TransportRouter>(
        rc, dc,
        [rc_channel = rc.get(), endpoint] {
          return rc_channel->policy().state(endpoint, rdmaio::wire::RdmaOp::kGet) ==
                 rdmaio::wire::OpState::kDeclined;
        },
        fmt::format("{} declined hipobj-rc-v2 (RC): cuObject DC", endpoint));
    REELFS_LOG_INFO(kSubject,
                    "--rdma: {} port {}, transport auto: RC (up to {} sessions) until the "
                    "endpoint declines it, then DC (up to {} targets)",
                    where->device, where->port, rdma.sessions, rdma.sessions);
  } else if (dc != nullptr) {
    path.channel = dc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {}, cuObject DC, up to {} targets", where->device,
                    where->port, rdma.sessions);
  } else {
    path.channel = rc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {}, up to {} RC sessions per gateway", where->device,
                    where->port, rdma.sessions);
  }
  if (rc != nullptr) {
    counters.push_back([weak = std::weak_ptr<channel::RcChannel>(rc)] {
      auto c = weak.lock();
      return c ? std::optional(c->counters()) : std::nullopt;
    });
  }
  if (dc != nullptr) {
    counters.push_back([weak = std::weak_ptr<channel::DcChannel>(dc)] {
      auto c = weak.lock();
      return c ? std::optional(c->counters()) : std::nullopt;
    });
  }
  // One entry per channel, each with its transport.
  path.metrics_json = [counters]() -> Json {
    Json out = Json::array();
    for (const auto& get : counters) {
      std::optional<rdmaio::ChannelCounters> c = get();
      if (c) out.push_back(CountersJson(*c));
    }
    return out.empty() ? Json() : out;
  };
  path.log_line = [counters]() -> std::string {
    std::string out;
    for (const auto& get : counters) {
      std::optional<rdmaio::ChannelCounters> c = get();
      if (!c) continue;
      out += (out.empty() ? "" : "; ") + CountersLine(*c);
    }
    return out;
  };
  return path;
}
#else
constexpr bool kBuiltWithRdma = false;

RdmaPath OpenRdmaPath(const RdmaConfig&, const std::shared_ptr<s3::ObjectStore>&) { return {}; }
#endif

void DetachStdio() {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  dup2(null, STDIN_FILENO);
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  if (null > STDERR_FILENO) close(null);
}

// Builds the FileSystem over a fresh client, mounts, reports, serves. Runs in the daemon (or in
// the foreground process).
int MountAndServe(const MountConfig& cfg, const StoreFactory& make_store, Notifier& notify) {
  auto store = make_store();
  if (!store.ok()) {
    notify.Failed(store.status().ToString());
    return 1;
  }
  std::shared_ptr<s3::ObjectStore> shared_store = std::move(*store);
  auto budget = std::make_shared<fuse::MemoryBudget>(cfg.mount.max_memory);
  RdmaPath rdma;
  if (cfg.rdma.enabled) rdma = OpenRdmaPath(cfg.rdma, shared_store);
  std::shared_ptr<fuse::BufferPool> pool;
  if (rdma.channel != nullptr) {
    WarnIfMemlockLow(cfg.mount.max_memory);
    // The registrar lives as long as the channel it belongs to (an aliasing pointer keeps it).
    pool = fuse::CreateRegisteredBufferPool(
        std::shared_ptr<rdmaio::MemoryRegistrar>(rdma.channel, &rdma.channel->registrar()),
        cfg.mount.max_memory);
  } else {
    pool = fuse::CreateHeapBufferPool(cfg.mount.max_memory);
  }

  fuse::MountOptions mount = cfg.mount;
  mount.endpoint = ClientEndpoint(*shared_store);
  std::shared_ptr<hsm::Ledger> ledger = OpenLedger(cfg.mount.ledger_path);
  mount.ledger_path = ledger->path();
  CapOfflineWait(mount.tape);
  std::unique_ptr<Timer> timer = CreateRealTimer(RealClock(), "reelfs-restore");
  hsm::RestorerOptions restorer_options = cfg.restorer;
  restorer_options.endpoint = mount.endpoint;
  restorer_options.bucket = mount.bucket;
  std::shared_ptr<hsm::Restorer> restorer =
      hsm::Restorer::Create(shared_store, ledger, *timer, std::move(restorer_options));
  std::unique_ptr<fuse::FileSystem> fs =
      fuse::CreateFileSystem(shared_store, mount, pool, budget, RealClock(), restorer,
                             fuse::DataPath{rdma.channel, rdma.metrics_json});

  auto daemon = fuse::Daemon::Mount(*fs, cfg.daemon);
  if (!daemon.ok()) {
    notify.Failed(daemon.status().ToString());
    fs.reset();
    restorer->Shutdown();
    pool.reset();
    rdma = RdmaPath{};
    return 1;
  }
  REELFS_LOG_INFO(kSubject,
                  "serving s3://{}/{} at {}: uid={} gid={} file_mode={:o} dir_mode={:o} "
                  "metadata_ttl={}s negative_ttl={}s max_memory={} part_size={}",
                  cfg.mount.bucket, cfg.mount.prefix, cfg.daemon.mountpoint, cfg.mount.uid,
                  cfg.mount.gid, cfg.mount.file_mode, cfg.mount.dir_mode,
                  cfg.mount.metadata_ttl.count(), cfg.mount.negative_ttl.count(),
                  FormatByteSize(cfg.mount.max_memory),
                  FormatByteSize(cfg.mount.prefetch.part_size));
  REELFS_LOG_INFO(kSubject, "offline objects: --offline={} timeout={}s; ledger {}; endpoint '{}'",
                  mount.tape.offline == fuse::OfflineMode::kWait     ? "wait"
                  : mount.tape.offline == fuse::OfflineMode::kEagain ? "eagain"
                                                                     : "eacces",
                  mount.tape.offline_wait.count(), mount.ledger_path, mount.endpoint);
  notify.Mounted();
  if (!cfg.foreground) {
    DetachStdio();
    if (chdir("/") != 0) REELFS_LOG_DEBUG(kSubject, "chdir /: {}", std::strerror(errno));
  }

  // Reads waiting for a restore are answered (EINTR) as soon as the loop ends, so an unmount
  // does not wait out the drain for them.
  Status run = (*daemon)->Run([&restorer] { restorer->Shutdown(); });
  const fuse::FsCounters c = fs->counters();
  REELFS_LOG_INFO(kSubject,
                  "unmounted {}: lookups={} list_requests={} head_requests={} open_handles={} "
                  "inodes={} bytes_read={} peak_prefetch_memory={} fresh_buffers={}",
                  cfg.daemon.mountpoint, c.lookups, c.list_requests, c.head_requests,
                  c.open_handles, c.inodes, c.bytes_read, FormatByteSize(budget->peak()),
                  pool->stats().fresh_allocations);
  const hsm::RestorerCounters rc = restorer->counters();
  REELFS_LOG_INFO(kSubject,
                  "tape: offline_reads={} restore_waits={} xattr_refreshes={} "
                  "restore_requests={} restore_heads={} restore_waiters={} completed={} "
                  "re_requests={} failures={}",
                  c.offline_reads, c.restore_waits, c.xattr_refreshes, rc.restore_requests,
                  rc.head_requests, rc.waiters, rc.completed, rc.re_requests, rc.failures);
  if (rdma.log_line) {
    REELFS_LOG_INFO(kSubject, "rdma: {} registration_failures={}", rdma.log_line(),
                    pool->stats().registration_failures);
  }
  // Teardown order: the session (unmount) first, then the FileSystem (cancels prefetches), the
  // Restorer (answers its waiters, stops polling) before the timer and the client it uses, then
  // the client (completes whatever is left with kCancelled). The RDMA channel goes after the
  // FileSystem (no prefetcher left to fetch through it) and before the client it sends through;
  // the pool first, as its registered buffers keep the channel's registrar.
  daemon->reset();
  fs.reset();
  pool.reset();
  rdma = RdmaPath{};
  restorer->Shutdown();
  restorer.reset();
  timer.reset();
  shared_store.reset();
  if (!run.ok()) {
    REELFS_LOG_ERROR(kSubject, "{}", run.ToString());
    return 1;
  }
  return 0;
}

// The parent's side of daemonizing: waits for the child's "mounted" or its error.
int AwaitChild(pid_t child, int read_fd) {
  std::string got;
  char buf[512];
  for (;;) {
    ssize_t n = read(read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(read_fd);
  if (got == kMountedToken) return 0;
  int status = 0;
  waitpid(child, &status, 0);
  std::cerr << "reelfs mount: "
            << (got.empty() ? "the daemon exited before mounting (see syslog or --log-file)" : got)
            << "\n";
  return 1;
}

}  // namespace

int RunMount(const MountFlags& flags, const StoreFactory& make_store) {
  auto cfg = ParseMountFlags(flags);
  if (!cfg.ok()) {
    std::cerr << "reelfs mount: " << cfg.status().message() << "\n";
    return 2;
  }
  if (cfg->rdma.enabled && !kBuiltWithRdma) {
    std::cerr << "reelfs mount: --rdma: reelfs was built without rdma-core (libibverbs-dev, "
                 "librdmacm-dev); mount without --rdma\n";
    return 2;
  }
#if REELFS_HAVE_RDMA
  if (cfg->rdma.enabled) {
    // Said here, on the user's terminal, as well as in the daemon's log (unless that log is this
    // terminal already).
    if (auto where = rdmaio::verbs::FindActivePort(cfg->rdma.device); !where.ok()) {
      std::cerr << "reelfs mount: warning: --rdma: " << where.status().ToString()
                << "; mounting with reads over HTTP\n";
    } else if (cfg->rdma.transport == RdmaTransport::kDc &&
               !(cfg->foreground && cfg->log_file.empty() && !cfg->syslog)) {
      if (Status dc = ProbeDc(cfg->rdma); !dc.ok()) {
        std::cerr << "reelfs mount: warning: --rdma-transport=dc: " << dc.message()
                  << "; using RC\n";
      }
    }
  }
#endif
  if (!cfg->log_file.empty()) {
    if (Status s = LogToFile(cfg->log_file); !s.ok()) {
      std::cerr << "reelfs mount: --log-file: " << s.ToString() << "\n";
      return 2;
    }
  }

  {
    // The check runs in the calling process so its verdict reaches the user's terminal. The
    // client is destroyed again before fork: its event-loop thread would not survive it.
    auto store = make_store();
    if (!store.ok()) {
      std::cerr << "reelfs mount: " << store.status().ToString() << "\n";
      return 1;
    }
    Status check = CheckBucket(**store, cfg->mount);
    if (IsCredentialError(check)) {
      // Issue 3: wrong credentials still mount, and every access answers EACCES.
      std::cerr << "reelfs mount: warning: s3://" << cfg->mount.bucket << "/" << cfg->mount.prefix
                << " refused these credentials (" << check.ToString()
                << "); mounting anyway, accesses will fail with EACCES\n";
    } else if (!check.ok()) {
      std::cerr << "reelfs mount: cannot list s3://" << cfg->mount.bucket << "/"
                << cfg->mount.prefix << ": " << check.ToString() << "\n";
      return 1;
    }
  }

  if (cfg->foreground) {
    if (cfg->syslog) LogToSyslog("reelfs");
    Notifier notify(-1);
    return MountAndServe(*cfg, make_store, notify);
  }

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::cerr << "reelfs mount: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "reelfs mount: fork: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (child > 0) {
    close(fds[1]);
    return AwaitChild(child, fds[0]);
  }
  close(fds[0]);
  setsid();  // no controlling terminal: the shell's Ctrl-C or hangup does not reach the daemon
  if (cfg->log_file.empty()) LogToSyslog("reelfs");
  Notifier notify(fds[1]);
  return MountAndServe(*cfg, make_store, notify);
}

}  // namespace reelfs::cli

#include "cli/mount_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include <sys/wait.h>

#include "common/clock.h"
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
// would abort the whole connection (tape-archive.md §7.4).
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
  std::shared_ptr<fuse::BufferPool> pool = fuse::CreateHeapBufferPool(cfg.mount.max_memory);

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
      fuse::CreateFileSystem(shared_store, mount, pool, budget, RealClock(), restorer);

  auto daemon = fuse::Daemon::Mount(*fs, cfg.daemon);
  if (!daemon.ok()) {
    notify.Failed(daemon.status().ToString());
    fs.reset();
    restorer->Shutdown();
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
  // Teardown order: the session (unmount) first, then the FileSystem (cancels prefetches), the
  // Restorer (answers its waiters, stops polling) before the timer and the client it uses, then
  // the client (completes whatever is left with kCancelled).
  daemon->reset();
  fs.reset();
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

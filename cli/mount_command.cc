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
#include "common/units.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/lowlevel/daemon.h"
#include "s3/await.h"

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
  std::unique_ptr<fuse::FileSystem> fs =
      fuse::CreateFileSystem(shared_store, cfg.mount, pool, budget, RealClock());

  auto daemon = fuse::Daemon::Mount(*fs, cfg.daemon);
  if (!daemon.ok()) {
    notify.Failed(daemon.status().ToString());
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
  notify.Mounted();
  if (!cfg.foreground) {
    DetachStdio();
    if (chdir("/") != 0) REELFS_LOG_DEBUG(kSubject, "chdir /: {}", std::strerror(errno));
  }

  Status run = (*daemon)->Run();
  const fuse::FsCounters c = fs->counters();
  REELFS_LOG_INFO(kSubject,
                  "unmounted {}: lookups={} list_requests={} head_requests={} open_handles={} "
                  "inodes={} bytes_read={} peak_prefetch_memory={} fresh_buffers={}",
                  cfg.daemon.mountpoint, c.lookups, c.list_requests, c.head_requests,
                  c.open_handles, c.inodes, c.bytes_read, FormatByteSize(budget->peak()),
                  pool->stats().fresh_allocations);
  // Teardown order: the session (unmount) first, then the FileSystem (cancels prefetches), then
  // the client (completes whatever is left with kCancelled).
  daemon->reset();
  fs.reset();
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

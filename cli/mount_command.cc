#include "cli/mount_command.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include <sys/wait.h>

#include "cli/explain.h"
#include "cli/mount_stack.h"
#include "cli/rdma_data_path.h"
#include "cli/rdma_open.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "common/units.h"
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

// Where the daemon reports "mounted" or its error: the parent's pipe, or stderr in the foreground
// (no descriptor).
class Notifier {
 public:
  explicit Notifier(UniqueFd fd) : fd_(std::move(fd)) {}
  // `details` (may be empty) follows the token: what --verbose prints in the parent.
  void Mounted(std::string_view details) {
    if (!fd_.valid()) {
      std::cerr << details;
      return;
    }
    Send(std::string(kMountedToken) + "\n" + std::string(details));
  }
  void Failed(std::string_view message) {
    REELFS_LOG_ERROR(kSubject, "{}", message);
    if (!fd_.valid()) {
      std::cerr << "reelfs mount: " << message << "\n";
    } else {
      Send(message);
    }
  }

 private:
  // One message, then the pipe is closed: the parent reads to end of file.
  void Send(std::string_view text) {
    if (!fd_.valid()) return;
    while (!text.empty()) {
      ssize_t n = write(fd_.get(), text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.remove_prefix(static_cast<size_t>(n));
    }
    fd_.Reset();
  }
  UniqueFd fd_;
};

void DetachStdio() {
  auto null = UniqueFd::Open("/dev/null", O_RDWR);
  if (!null.ok()) return;
  dup2(null->get(), STDIN_FILENO);
  dup2(null->get(), STDOUT_FILENO);
  dup2(null->get(), STDERR_FILENO);
  // Opened as one of the three (they were closed): it is that descriptor now, keep it open.
  if (null->get() <= STDERR_FILENO) null->Release();
}

// Builds the mount stack over a fresh client, mounts, reports, serves: the loop's status, or
// nullopt when building or mounting failed (reported through `notify`). Every return tears the
// stack down in its order (cli/mount_stack.h).
std::optional<Status> MountAndServe(const MountConfig& cfg, const ClientFactory& make_clients,
                                    Notifier& notify) {
  auto stack = MountStack::Build(cfg, make_clients);
  if (!stack.ok()) {
    notify.Failed(std::string(stack.status().message()));
    return std::nullopt;
  }
  if (Status mounted = (*stack)->Mount(cfg.daemon); !mounted.ok()) {
    notify.Failed(std::string(mounted.message()));
    return std::nullopt;
  }
  const fuse::MountOptions& mount = (*stack)->mount();
  REELFS_LOG_INFO(kSubject,
                  "serving s3://{}/{} at {}: uid={} gid={} file_mode={:o} dir_mode={:o} "
                  "metadata_ttl={}s negative_ttl={}s max_memory={} part_size={}",
                  cfg.mount.bucket, cfg.mount.prefix, cfg.daemon.mountpoint, cfg.mount.uid,
                  cfg.mount.gid, cfg.mount.file_mode, cfg.mount.dir_mode,
                  cfg.mount.metadata_ttl.count(), cfg.mount.negative_ttl.count(),
                  FormatByteSize(cfg.mount.max_memory),
                  FormatByteSize(cfg.mount.prefetch.part_size));
  REELFS_LOG_INFO(kSubject, "writes: {}{}{}, upload parts from {}",
                  mount.write.read_only ? "refused (--read-only)" : "new files",
                  mount.write.allow_overwrite ? ", overwrites allowed" : "",
                  mount.write.allow_delete ? ", deletes allowed" : "",
                  FormatByteSize(mount.write.part_size));
  REELFS_LOG_INFO(kSubject, "offline objects: --offline={} timeout={}s; ledger {}; endpoint '{}'",
                  mount.tape.offline == fuse::OfflineMode::kWait     ? "wait"
                  : mount.tape.offline == fuse::OfflineMode::kEagain ? "eagain"
                                                                     : "eacces",
                  mount.tape.offline_wait.count(), mount.ledger_path, mount.endpoint);
  notify.Mounted(cfg.verbose ? (*stack)->VerboseSummary() : std::string());
  if (!cfg.foreground) {
    DetachStdio();
    if (chdir("/") != 0) REELFS_LOG_DEBUG(kSubject, "chdir /: {}", std::strerror(errno));
  }
  return (*stack)->Serve();
}

// The daemon's (or the foreground process's) exit status. A failed loop is logged after the
// teardown, like the unmount counters before it.
int Serve(const MountConfig& cfg, const ClientFactory& make_clients, Notifier& notify) {
  const std::optional<Status> run = MountAndServe(cfg, make_clients, notify);
  if (!run) return 1;
  if (!run->ok()) {
    REELFS_LOG_ERROR(kSubject, "{}", run->ToString());
    return 1;
  }
  return 0;
}

// The parent's side of daemonizing: waits for the child's "mounted" or its error.
int AwaitChild(pid_t child, UniqueFd read_fd) {
  std::string got;
  char buf[512];
  for (;;) {
    ssize_t n = read(read_fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  read_fd.Reset();
  const std::string mounted = std::string(kMountedToken) + "\n";
  if (got.starts_with(mounted)) {
    std::cout << got.substr(mounted.size()) << std::flush;
    return 0;
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::cerr << "reelfs mount: "
            << (got.empty() ? "the daemon exited before mounting (see syslog or --log-file)" : got)
            << "\n";
  return 1;
}

// What --rdma will find, said on the user's terminal as well as in the daemon's log (unless that
// log is this terminal already).
void WarnAboutRdma(const MountConfig& cfg) {
#if REELFS_HAVE_RDMA
  if (!cfg.rdma.enabled) return;
  if (Status port = ProbeRdmaPort(cfg.rdma); !port.ok()) {
    std::cerr << "reelfs mount: warning: --rdma: " << port.ToString()
              << "; mounting with reads over HTTP\n";
  } else if (cfg.rdma.transport == RdmaTransport::kDc &&
             !(cfg.foreground && cfg.log_file.empty() && !cfg.syslog)) {
    if (Status dc = ProbeRdmaDc(cfg.rdma); !dc.ok()) {
      std::cerr << "reelfs mount: warning: --rdma-transport=dc: " << dc.message() << "; using RC\n";
    }
  }
#else
  (void)cfg;
#endif
}

// The check runs in the calling process so its verdict reaches the user's terminal. The client
// is destroyed again before fork: its event-loop thread would not survive it. 0 to go on, else
// the exit status.
int CheckBeforeMount(const MountConfig& cfg, const ClientFactory& make_clients) {
  auto clients = make_clients();
  if (!clients.ok()) {
    std::cerr << "reelfs mount: " << clients.status().message() << "\n";
    return 1;
  }
  Status check = CheckBucket(*clients->store, cfg.mount);
  if (!check.ok()) {
    // Refused like mountpoint-s3's first listing: a typo or wrong keys fail here, with what a
    // person needs to fix them, rather than as EACCES or EIO on every access of a mount that
    // seems fine. (Credentials refused later, once mounted, answer EACCES.)
    std::cerr << "reelfs mount: cannot mount s3://" << cfg.mount.bucket << "/" << cfg.mount.prefix
              << ": "
              << Explain(check, {.bucket = cfg.mount.bucket,
                                 .key = "",
                                 .endpoint = clients->client->options().endpoint})
              << "\n";
    return 1;
  }
  return 0;
}

// Forks the daemon: the parent waits for its "mounted" (or its error) on a pipe and exits.
int Daemonize(const MountConfig& cfg, const ClientFactory& make_clients) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::cerr << "reelfs mount: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "reelfs mount: fork: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (child > 0) {
    write_end.Reset();
    return AwaitChild(child, std::move(read_end));
  }
  read_end.Reset();
  setsid();  // no controlling terminal: the shell's Ctrl-C or hangup does not reach the daemon
  if (cfg.log_file.empty()) LogToSyslog("reelfs");
  Notifier notify(std::move(write_end));
  return Serve(cfg, make_clients, notify);
}

}  // namespace

int RunMount(const MountFlags& flags, const ClientFactory& make_clients) {
  auto cfg = ParseMountFlags(flags);
  if (!cfg.ok()) {
    std::cerr << "reelfs mount: " << cfg.status().message() << "\n";
    return 2;
  }
  if (cfg->rdma.enabled && !BuiltWithRdma()) {
    std::cerr << "reelfs mount: --rdma: reelfs was built without rdma-core (libibverbs-dev, "
                 "librdmacm-dev); mount without --rdma\n";
    return 2;
  }
  WarnAboutRdma(*cfg);
  if (!cfg->log_file.empty()) {
    if (Status s = LogToFile(cfg->log_file); !s.ok()) {
      std::cerr << "reelfs mount: --log-file: " << s.ToString() << "\n";
      return 2;
    }
  }
  if (int failed = CheckBeforeMount(*cfg, make_clients); failed != 0) return failed;
  // `kill -USR2 PID` turns debug logging on and off in the running daemon (kept across fork).
  if (Status s = InstallDebugToggle(SIGUSR2); !s.ok()) {
    std::cerr << "reelfs mount: warning: no SIGUSR2 debug toggle: " << s.message() << "\n";
  }

  if (!cfg->foreground) return Daemonize(*cfg, make_clients);
  if (cfg->syslog) LogToSyslog("reelfs");
  Notifier notify{UniqueFd()};
  return Serve(*cfg, make_clients, notify);
}

}  // namespace reelfs::cli

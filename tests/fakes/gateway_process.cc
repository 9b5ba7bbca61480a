#include "tests/fakes/gateway_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/unique_fd.h"

namespace reelfs::testing {

const char* GatewayBinaryOrSkip() {
  const char* bin = std::getenv("REELFS_GATEWAY_BIN");
  if (bin != nullptr && access(bin, X_OK) == 0) return bin;
  std::printf("SKIP: reelfs-gateway not built (REELFS_GATEWAY_BIN=%s)\n", bin ? bin : "(unset)");
  return nullptr;
}

Subprocess::~Subprocess() { Stop(SIGTERM); }

Status Subprocess::Start(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return Status::InvalidArgument("empty argv");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    if (!log_path.empty()) {
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
    }
    setpgid(0, 0);  // its own group, so a node wrapper's children die with it
    execv(args[0], args.data());
    _exit(127);
  }
  pid_ = pid;
  return Status::Ok();
}

void Subprocess::Stop(int signal, std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  kill(-pid_, signal);
  kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

bool Subprocess::Exited() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

Result<int> FreeLoopbackPort() {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return ErrnoToStatus(errno, "bind");
  }
  socklen_t len = sizeof addr;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoToStatus(errno, "getsockname");
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

Status WaitForPort(int port, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::DeadlineExceeded("nothing listens on 127.0.0.1:" + std::to_string(port));
}

GatewayProcess::GatewayProcess(GatewayConfig config)
    : config_(std::move(config)),
      port_file_(config_.root + "/../gateway.port"),
      log_file_(config_.root + "/../gateway.log") {}

GatewayProcess::~GatewayProcess() { process_.Stop(SIGTERM); }

Status GatewayProcess::Start(std::chrono::milliseconds deadline) {
  unlink(port_file_.c_str());
  std::vector<std::string> argv = {
      config_.binary,     "--root",           config_.root,
      "--create",         "--listen",         "127.0.0.1:" + std::to_string(port_),
      "--access-key",     config_.access_key, "--secret-key",
      config_.secret_key, "--port-file",      port_file_};
  argv.insert(argv.end(), config_.extra_args.begin(), config_.extra_args.end());
  REELFS_RETURN_IF_ERROR(process_.Start(argv, log_file_));
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(port_file_);
    int port = 0;
    if (in >> port && port > 0) {
      port_ = port;
      return WaitForPort(port_, std::chrono::milliseconds(2000));
    }
    if (process_.Exited()) {
      return Status::Unavailable("reelfs-gateway exited at start; see " + log_file_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  process_.Stop(SIGKILL);
  return Status::DeadlineExceeded("reelfs-gateway did not write " + port_file_ + "; see " +
                                  log_file_);
}

void GatewayProcess::Kill() { process_.Stop(SIGKILL); }
void GatewayProcess::Terminate() { process_.Stop(SIGTERM); }

Status GatewayProcess::Restart(std::chrono::milliseconds deadline) {
  if (process_.running()) Kill();
  return Start(deadline);
}

}  // namespace reelfs::testing

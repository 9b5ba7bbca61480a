// Test helpers that run a real S3 server as a child process on loopback.
//
//   Subprocess       fork/exec of argv, SIGTERM (then SIGKILL) + waitpid in the destructor.
//   GatewayProcess   reelfs-gateway on 127.0.0.1: starts it with --port-file, waits for the port,
//                    Kill() (SIGKILL, to simulate a crash) and Restart() on the same port.
//   FreeLoopbackPort / WaitForPort  for servers without a port file (s3rver).
//   GatewayBinaryOrSkip  the binary from REELFS_GATEWAY_BIN, or the skip line.
//
// Thread-safety: none; one test thread owns each object.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace reelfs::testing {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts argv[0] (a path) with argv; stdout/stderr go to `log_path` (appended) when given.
  [[nodiscard]] Status Start(const std::vector<std::string>& argv,
                             const std::string& log_path = {});
  // Sends `signal` and reaps the child (SIGKILL after `grace` if it lingers).
  void Stop(int signal, std::chrono::milliseconds grace = std::chrono::seconds(5));
  // Reaps the child if it has exited; true then.
  bool Exited();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A free TCP port on 127.0.0.1 at the time of the call (bind to 0, read, close).
Result<int> FreeLoopbackPort();
// Polls until 127.0.0.1:port accepts a TCP connection.
[[nodiscard]] Status WaitForPort(int port, std::chrono::milliseconds deadline);

// The reelfs-gateway binary named by REELFS_GATEWAY_BIN, or nullptr after printing the SKIP
// line (the test then exits 77) when it is unset or not executable.
const char* GatewayBinaryOrSkip();

struct GatewayConfig {
  std::string binary;  // path of reelfs-gateway
  std::string root;    // --root DIR (must exist)
  std::string access_key = "reelfs-test-key";
  std::string secret_key = "reelfs-test-secret";
  std::vector<std::string> extra_args;
};

class GatewayProcess {
 public:
  explicit GatewayProcess(GatewayConfig config);
  ~GatewayProcess();

  // Starts the gateway on an ephemeral port (first time) or on the same port (after Kill).
  [[nodiscard]] Status Start(std::chrono::milliseconds deadline = std::chrono::seconds(20));
  void Kill();       // SIGKILL: a crash, mid-transfer if you like
  void Terminate();  // SIGTERM: clean shutdown
  [[nodiscard]] Status Restart(std::chrono::milliseconds deadline = std::chrono::seconds(20));

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const GatewayConfig& config() const { return config_; }

 private:
  GatewayConfig config_;
  std::string port_file_;
  std::string log_file_;
  int port_ = 0;
  Subprocess process_;
};

}  // namespace reelfs::testing

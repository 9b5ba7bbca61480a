// Server: asynchronous HTTP/1.1 server (Boost.Beast/Asio behind a pimpl; this header and its
// users stay free of Boost).
//
// N io threads share one io_context; each connection runs on its own strand with keep-alive,
// an idle timeout, `Expect: 100-continue`, chunked request bodies and streamed response bodies.
// Every response gets `x-amz-request-id` and the `Server: reelfs-gateway (reference gateway,
// not for production)` header. With a certificate (ServerOptions::tls_cert) it speaks TLS.
// SO_REUSEADDR is set so a restarted gateway can rebind at once.
//
// Thread-safety: Stop may be called from any thread (also from a signal handler thread via
// Run's own signal handling); Run blocks the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "gateway/http/types.h"

namespace reelfs::gateway::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 7070;  // 0: ephemeral
  int threads = 4;
  std::chrono::seconds idle_timeout{60};
  // Bytes per second each accepted connection may send (SO_MAX_PACING_RATE); 0: unlimited.
  uint64_t max_connection_rate = 0;
  bool handle_signals = true;  // SIGINT/SIGTERM stop Run
  // PEM files: with a certificate, every connection is TLS (1.2 or 1.3; OpenSSL through
  // Boost.Asio) and bodies go through it instead of sendfile(2). Empty: plain HTTP.
  std::string tls_cert;
  std::string tls_key;
};

class Server {
 public:
  // Binds and listens; does not accept until Run. `handler` must outlive the server.
  static Result<std::unique_ptr<Server>> Bind(const ServerOptions& options, Handler& handler);
  ~Server();

  std::string host() const;
  uint16_t port() const;

  // Serves until Stop or SIGINT/SIGTERM; returns when all io threads ended.
  void Run();
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reelfs::gateway::http

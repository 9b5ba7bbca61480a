// gateway/http/Server stopped while connections are being accepted, hundreds of times in one
// process: Run must return and nothing may touch the closed acceptor. Under TSan this checks the
// acceptor is only used on one strand; in the plain build an accept completion re-arming
// async_accept on an acceptor that Stop had closed crashed in the epoll reactor.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gateway/http/server.h"

namespace reelfs::gateway::http {
namespace {

class OkHandler : public Handler {
 public:
  Started Start(Request) override {
    Response r;
    r.body = "ok";
    return r;
  }
  Response InternalError(const Request&, std::string_view) override { return {.status = 500}; }
  Response BadRequest(const Request&, std::string_view) override { return {.status = 400}; }
};

// Connects, sends one request, closes; until `stop`. Failures are expected once the server stops.
void Churn(uint16_t port, const std::atomic<bool>& stop, std::atomic<int>& connected) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  constexpr std::string_view kRequest = "GET /b/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  while (!stop.load()) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      connected.fetch_add(1);
      (void)!::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL);
    }
    ::close(fd);
  }
}

TEST_CASE("Stop while accepting: Run returns every time") {
  OkHandler handler;
  std::mt19937 rng(42);
  int total_connected = 0;
  for (int cycle = 0; cycle < 300; ++cycle) {
    ServerOptions options;
    options.port = 0;
    options.threads = 4;
    options.handle_signals = false;
    auto server = Server::Bind(options, handler);
    REQUIRE(server.ok());
    std::thread runner([&] { (*server)->Run(); });
    std::atomic<bool> stop{false};
    std::atomic<int> connected{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 3; ++i) {
      clients.emplace_back(Churn, (*server)->port(), std::cref(stop), std::ref(connected));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 3000));
    (*server)->Stop();
    runner.join();  // a crash or a hang here is the failure
    stop = true;
    for (auto& t : clients) t.join();
    total_connected += connected.load();
  }
  // The precondition: connections really arrived while the servers were stopping.
  CHECK(total_connected > 300);
  MESSAGE("connections made: " << total_connected);
}

}  // namespace
}  // namespace reelfs::gateway::http

#include "cli/metrics_listener.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"

namespace reelfs::cli {
namespace {

UniqueFd Connect(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Sends `request` and reads the whole answer (the listener closes after it).
std::string Exchange(uint16_t port, const std::string& request) {
  UniqueFd fd = Connect(port);
  REQUIRE(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0;) out.append(buf, n);
  return out;
}

TEST_SUITE("cli") {
  TEST_CASE("MetricsListener: GET /metrics answers the exposition, other requests 404/405") {
    std::atomic<int> renders{0};
    auto listener = MetricsListener::Start(ListenAddress{"127.0.0.1", 0}, [&renders] {
      ++renders;
      return std::string("# TYPE x_total counter\nx_total 7\n");
    });
    REQUIRE_MESSAGE(listener.ok(), listener.status().ToString());
    const uint16_t port = (*listener)->port();
    REQUIRE(port != 0);
    CHECK((*listener)->bound() == "127.0.0.1:" + std::to_string(port));

    const std::string ok = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(ok.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(ok.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
    CHECK(ok.find("Content-Length: 33\r\n") != std::string::npos);
    CHECK(ok.substr(ok.size() - 33) == "# TYPE x_total counter\nx_total 7\n");

    const std::string head = Exchange(port, "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n");
    CHECK(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(head.substr(head.size() - 4) == "\r\n\r\n");  // headers only

    CHECK(Exchange(port, "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 ", 0) == 0);
    const std::string post = Exchange(port, "POST /metrics HTTP/1.1\r\n\r\n");
    CHECK(post.rfind("HTTP/1.1 405 ", 0) == 0);
    CHECK(post.find("Allow: GET, HEAD\r\n") != std::string::npos);
    CHECK(Exchange(port, "garbage\r\n\r\n").rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(Exchange(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n")
              .rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(renders.load() == 2);  // GET and HEAD only
  }

  TEST_CASE("MetricsListener: a port in use is refused; a silent client does not hold it up") {
    auto first = MetricsListener::Start(ListenAddress{"127.0.0.1", 0}, [] { return ""; });
    REQUIRE(first.ok());
    auto second =
        MetricsListener::Start(ListenAddress{"127.0.0.1", (*first)->port()}, [] { return ""; });
    REQUIRE_FALSE(second.ok());
    CHECK(std::string(second.status().message()).find("cannot bind 127.0.0.1:") !=
          std::string::npos);
    // A client that connects and says nothing: the listener's thread waits in its read, and
    // the destructor must still return (it wakes the thread) rather than wait for the client.
    UniqueFd silent = Connect((*first)->port());
    ::usleep(100 * 1000);  // let the thread accept it and start waiting
    first->reset();
    CHECK(first->get() == nullptr);
  }
}

}  // namespace
}  // namespace reelfs::cli

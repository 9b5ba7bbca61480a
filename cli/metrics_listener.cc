#include "cli/metrics_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/prom_text.h"

namespace reelfs::cli {
namespace {

constexpr std::string_view kSubject = "metrics";
constexpr size_t kMaxHead = 8 << 10;

// Writes all of `data`; false when the peer went away (MSG_NOSIGNAL: no SIGPIPE).
bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Response(int code, std::string_view reason, std::string_view type,
                     std::string_view body, bool head_only) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n", code,
      reason, type, body.size());
  if (code == 405) out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (!head_only) out += body;
  return out;
}

}  // namespace

Result<std::unique_ptr<MetricsListener>> MetricsListener::Start(const ListenAddress& address,
                                                                Render render) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
      ::inet_pton(AF_INET, address.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(address.port);
    len = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET6, address.host.c_str(), &v6->sin6_addr) != 1) {
      return Status::InvalidArgument("--metrics-listen: not an IP address: " + address.host);
    }
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(address.port);
    len = sizeof(sockaddr_in6);
  }
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "--metrics-listen: socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    // In words, without the errno's status name: this is what `reelfs mount` prints.
    return Status::FailedPrecondition(fmt::format("--metrics-listen: cannot bind {}:{}: {}",
                                                  address.host, address.port,
                                                  std::strerror(errno)));
  }
  if (::listen(fd.get(), 16) != 0) return ErrnoToStatus(errno, "--metrics-listen: listen");
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const uint16_t port =
      ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                              : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "--metrics-listen: pipe");
  UniqueFd wake_read(pipe_fds[0]);
  UniqueFd wake_write(pipe_fds[1]);
  auto listener = std::unique_ptr<MetricsListener>(
      new MetricsListener(std::move(fd), std::move(wake_read), std::move(wake_write), address.host,
                          port, std::move(render)));
  listener->thread_ = std::thread([l = listener.get()] { l->Loop(); });
  return listener;
}

MetricsListener::MetricsListener(UniqueFd listen_fd, UniqueFd wake_read, UniqueFd wake_write,
                                 std::string host, uint16_t port, Render render)
    : listen_fd_(std::move(listen_fd)),
      wake_read_(std::move(wake_read)),
      wake_write_(std::move(wake_write)),
      host_(std::move(host)),
      port_(port),
      render_(std::move(render)) {}

MetricsListener::~MetricsListener() {
  if (thread_.joinable()) {
    const char byte = 0;
    while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
}

std::string MetricsListener::bound() const {
  return host_.find(':') != std::string::npos ? fmt::format("[{}]:{}", host_, port_)
                                              : fmt::format("{}:{}", host_, port_);
}

void MetricsListener::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      REELFS_LOG_ERROR(kSubject, "poll: {}; metrics no longer served", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    UniqueFd conn(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) continue;  // ECONNABORTED, EMFILE...: the next scrape tries again
    Answer(conn.get());
  }
}

void MetricsListener::Answer(int fd) {
  const timeval timeout{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  std::string head;
  char buf[2048];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (head.size() > kMaxHead) {
      SendAll(fd, Response(431, "Request Header Fields Too Large", "text/plain", "", false));
      return;
    }
    // The wake pipe too: an unmount never waits for a client that sends nothing.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents != 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;  // closed or failed
    head.append(buf, static_cast<size_t>(n));
  }
  if (head.find("\r\n\r\n") > kMaxHead) {
    SendAll(fd, Response(431, "Request Header Fields Too Large", "text/plain", "", false));
    return;
  }
  // "METHOD TARGET HTTP/1.x"
  const std::string_view line = std::string_view(head).substr(0, head.find("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    SendAll(fd, Response(400, "Bad Request", "text/plain", "bad request line\n", false));
    return;
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) {
    SendAll(fd, Response(405, "Method Not Allowed", "text/plain", "GET /metrics\n", false));
    return;
  }
  if (target != "/metrics") {
    SendAll(fd,
            Response(404, "Not Found", "text/plain", "the metrics are at /metrics\n", head_only));
    return;
  }
  std::string body;
  try {
    body = render_();
  } catch (const std::exception& e) {  // nothing throws across this thread's top
    REELFS_LOG_ERROR(kSubject, "rendering the metrics failed: {}", e.what());
    SendAll(fd, Response(500, "Internal Server Error", "text/plain", "", head_only));
    return;
  }
  SendAll(fd, Response(200, "OK", kPromContentType, body, head_only));
}

}  // namespace reelfs::cli

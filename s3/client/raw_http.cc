// The wire side of raw_http.h: connect, send, read a head, parse it.
#include "s3/client/raw_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/strings.h"
#include "s3/client/object_headers.h"
#include "s3/protocol/range.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {
namespace {

// A head longer than this is not an S3 GET answer.
constexpr size_t kMaxHead = 64 << 10;

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

int PollFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

}  // namespace

Result<UniqueFd> ConnectTcp(const Endpoint& ep, std::chrono::milliseconds connect_timeout,
                            std::chrono::milliseconds idle_timeout, SocketCanceller& canceller) {
  std::string host = ep.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = std::to_string(ep.port != 0 ? ep.port : 80);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::Unavailable("resolve " + host + ": " + ::gai_strerror(rc));
  }
  Status last = Status::Unavailable("connect " + host + ":" + port + ": no address");
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!fd.valid()) {
      last = ErrnoToStatus(errno, "socket");
      continue;
    }
    canceller.Watch(fd.get());
    int err = 0;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const int r = PollFor(fd.get(), POLLOUT, connect_timeout);
        socklen_t len = sizeof(err);
        if (r == 0) {
          err = ETIMEDOUT;
        } else if (r < 0 || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
          err = errno;
        }
      }
    }
    if (err != 0) {
      canceller.Watch(-1);
      last = ErrnoToStatus(err, "connect " + host + ":" + port);
      continue;
    }
    // Blocking from here on, with the idle timeout as the bound of every send and receive.
    const int flags = ::fcntl(fd.get(), F_GETFL);
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    const timeval tv = ToTimeval(idle_timeout);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(found);
    return fd;
  }
  ::freeaddrinfo(found);
  return last;
}

Status SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "send");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Reads the head and nothing after it. Each round peeks at what has arrived (blocking, bounded
// by the receive timeout): if the blank line is there, exactly the bytes up to it are taken;
// else everything peeked is head and is taken, so that the next peek waits for new bytes.
Result<std::string> ReadHead(int fd) {
  std::string head;
  std::string buf(16 << 10, '\0');
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_PEEK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return ErrnoToStatus(errno == EAGAIN ? ETIMEDOUT : errno, "receive the answer's head");
    }
    if (n == 0) {
      return Status::Unavailable(head.empty() ? "the server closed the connection before answering"
                                              : "the server closed the connection mid-head");
    }
    const size_t before = head.size();
    const std::string joined =
        head.substr(before >= 3 ? before - 3 : 0) + std::string(buf.data(), static_cast<size_t>(n));
    const size_t end = joined.find("\r\n\r\n");
    const size_t take =
        end == std::string::npos ? static_cast<size_t>(n) : end + 4 - std::min<size_t>(before, 3);
    const size_t at = head.size();
    head.resize(at + take);
    for (size_t got = 0; got < take;) {
      const ssize_t r = ::recv(fd, head.data() + at + got, take - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return Status::Unavailable("the head vanished from the socket");
      got += static_cast<size_t>(r);
    }
    if (end != std::string::npos) return head;
    if (head.size() > kMaxHead) return Status::DataLoss("the answer's head is over 64 KiB");
  }
}

const char* ConfiguredProxyVariable() {
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return name;
  }
  return nullptr;
}

std::string SignedRangedGet(const TransportOptions& options, const Endpoint& ep,
                            const std::string& bucket, const std::string& key, ByteRange range,
                            const std::string& if_match) {
  const RequestTarget target = BuildRequestTarget(ep, options.addressing, bucket, key, {});
  SignableRequest signable;
  signable.method = "GET";
  signable.encoded_path = target.encoded_path;
  signable.raw_query = target.raw_query;
  signable.headers.emplace_back("host", target.host_header);
  signable.headers.emplace_back("range", FormatRangeHeader(range));
  if (!if_match.empty())
    signable.headers.emplace_back("if-match", "\"" + StripEtag(if_match) + "\"");
  signable.payload_hash = std::string(kEmptyPayloadSha256);
  const Credentials creds = CurrentCredentials(options);
  if (!creds.empty()) {
    SigV4Params params;
    params.region = options.region;
    params.time = std::chrono::system_clock::now();
    SignRequest(signable, creds, params);
  }
  std::string wire = "GET " + target.encoded_path;
  if (!target.raw_query.empty()) wire += "?" + target.raw_query;
  wire += " HTTP/1.1\r\n";
  for (const auto& [name, value] : signable.headers) wire += name + ": " + value + "\r\n";
  if (!options.user_agent.empty()) wire += "user-agent: " + options.user_agent + "\r\n";
  wire += "\r\n";
  return wire;
}

SocketCanceller::SocketCanceller(std::shared_ptr<CancellationToken> token)
    : token_(std::move(token)) {
  if (token_ == nullptr) return;
  on_cancel_ = token_->OnCancel([watched = watched_] {
    std::lock_guard<std::mutex> lock(watched->mu);
    if (watched->fd >= 0) ::shutdown(watched->fd, SHUT_RDWR);
  });
}

SocketCanceller::~SocketCanceller() {
  if (token_ != nullptr) token_->RemoveOnCancel(on_cancel_);
}

void SocketCanceller::Watch(int fd) {
  std::lock_guard<std::mutex> lock(watched_->mu);
  watched_->fd = fd;
  if (fd >= 0 && cancelled()) ::shutdown(fd, SHUT_RDWR);
}

}  // namespace reelfs::s3

// The direct receiver (s3/client/direct_get.h) against a scripted loopback server that keeps
// connections alive: bodies land in the caller's buffer byte for byte, connections are reused,
// every answer it does not take goes to the fallback with the request unchanged, and a cancel or
// the receiver's destruction ends a request with kCancelled, never with the fallback.
#include "s3/client/direct_get.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"
#include "s3/client/endpoint_set.h"
#include "tests/fakes/loopback_listener.h"

namespace reelfs::s3 {
namespace {

// What the server does with one request: send `answer`, then keep the connection for the next
// request, close it, or hold it silent until the client goes away.
struct Answer {
  enum class Then { kKeep, kClose, kHang };
  std::string bytes;
  Then then = Then::kKeep;
};

// Accepts any number of connections, each served on its own thread, requests in order.
class KeepAliveServer {
 public:
  using Handler = std::function<Answer(const std::string& request)>;

  explicit KeepAliveServer(Handler handler) : handler_(std::move(handler)) {
    listener_ = testing::ListenOnLoopback(16, &port_);
    REQUIRE(listener_.valid());
    acceptor_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(listener_.get(), nullptr, nullptr);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        ++connections_;
        conns_.emplace_back(c);
        workers_.emplace_back([this, c] { Serve(c); });
      }
    });
  }
  ~KeepAliveServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (UniqueFd& c : conns_) ::shutdown(c.get(), SHUT_RDWR);
    for (std::thread& t : workers_) t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_;
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve(int c) {
    std::string in;
    char buf[8192];
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      const std::string request = in.substr(0, end + 4);
      in.erase(0, end + 4);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(request);
      }
      const Answer a = handler_(request);
      ::send(c, a.bytes.data(), a.bytes.size(), MSG_NOSIGNAL);
      if (a.then == Answer::Then::kClose) {
        ::shutdown(c, SHUT_RDWR);
        return;
      }
      if (a.then == Answer::Then::kHang) {
        while (::recv(c, buf, sizeof(buf), 0) > 0) {
        }
        return;
      }
    }
  }

  const Handler handler_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  int connections_ = 0;
  std::vector<UniqueFd> conns_;
  std::vector<std::thread> workers_;
  std::vector<std::string> requests_;
};

// Bytes 100.. of an object whose byte i is 'a' + i % 26.
std::string Body(uint64_t offset, uint64_t length) {
  std::string out(length, '\0');
  for (uint64_t i = 0; i < length; ++i) out[i] = static_cast<char>('a' + (offset + i) % 26);
  return out;
}

std::string Partial(uint64_t offset, uint64_t length, const std::string& extra = "") {
  return "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(offset) + "-" +
         std::to_string(offset + length - 1) +
         "/1000000\r\nContent-Length: " + std::to_string(length) + "\r\nETag: \"etag1\"\r\n" +
         extra + "\r\n" + Body(offset, length);
}

struct Fallbacks {
  std::mutex mu;
  std::vector<GetObjectRequest> seen;
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size();
  }
};

constexpr int kThreads = 4;

std::unique_ptr<DirectGet> Receiver(const std::string& url, Fallbacks& fallbacks,
                                    uint64_t min_bytes = 10) {
  TransportOptions o;
  o.endpoints = EndpointSet::Create({url}, {}).value();
  o.endpoint = o.endpoints->endpoint(0);
  o.credentials = {"AKIDEXAMPLE", "secret", ""};
  o.idle_timeout = std::chrono::milliseconds(30'000);
  return DirectGet::Create(
      o, min_bytes, kThreads,
      [&fallbacks](const GetObjectRequest& req, Callback<GetObjectResult> done) {
        {
          std::lock_guard<std::mutex> lock(fallbacks.mu);
          fallbacks.seen.push_back(req);
        }
        done(Status::Unavailable("the fallback's answer"));
      });
}

Result<GetObjectResult> Get(DirectGet& direct, GetObjectRequest req) {
  std::promise<Result<GetObjectResult>> p;
  REQUIRE(direct.Takes(req));
  direct.Submit(req, [&p](Result<GetObjectResult> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

GetObjectRequest Req(std::string& buffer, uint64_t offset, uint64_t length) {
  GetObjectRequest req;
  req.bucket = "bucket";
  req.key = "dir/a key";
  req.range = ByteRange{offset, length};
  buffer.assign(length, '#');
  req.buffer = std::as_writable_bytes(std::span<char>(buffer));
  req.if_match = "\"etag1\"";
  return req;
}

TEST_CASE("bodies land in the buffer byte for byte, on one kept-alive connection") {
  KeepAliveServer server([](const std::string& request) {
    // "range: bytes=A-B"
    const size_t at = request.find("range: bytes=") + 13;
    const uint64_t first = std::stoull(request.substr(at));
    const uint64_t last = std::stoull(request.substr(request.find('-', at) + 1));
    return Answer{Partial(first, last - first + 1)};
  });
  Fallbacks fallbacks;
  auto direct = Receiver(server.url(), fallbacks);
  REQUIRE(direct != nullptr);
  std::string buffer;
  for (uint64_t offset : {100u, 5000u, 77u}) {
    CAPTURE(offset);
    auto got = Get(*direct, Req(buffer, offset, 300000));
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    CHECK(got->bytes == 300000);
    CHECK(got->http_status == 206);
    CHECK(got->object_size == 1000000);
    CHECK(got->info.etag == "etag1");
    CHECK(buffer == Body(offset, 300000));
  }
  CHECK(server.connections() == 1);
  CHECK(fallbacks.count() == 0);
  const DirectGetCounters c = direct->counters();
  CHECK(c.requests == 3);
  CHECK(c.bytes == 900000);
  CHECK(c.connects == 1);
  const std::string req = server.requests().at(0);
  CHECK(req.starts_with("GET /bucket/dir/a%20key HTTP/1.1\r\n"));
  CHECK(req.find("range: bytes=100-300099\r\n") != std::string::npos);
  CHECK(req.find("if-match: \"etag1\"\r\n") != std::string::npos);
  CHECK(req.find("authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") != std::string::npos);
}

TEST_CASE("a connection the server closed is not reused; one with Connection: close is not kept") {
  SUBCASE("closed after its answer") {
    KeepAliveServer server([](const std::string&) {
      return Answer{Partial(100, 10), Answer::Then::kClose};
    });
    Fallbacks fallbacks;
    auto direct = Receiver(server.url(), fallbacks);
    std::string buffer;
    for (int i = 0; i < 3; ++i) {
      // Let the server's close arrive, so that the check before reuse sees it.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto got = Get(*direct, Req(buffer, 100, 10));
      REQUIRE_MESSAGE(got.ok(), got.status().ToString());
      CHECK(buffer == Body(100, 10));
    }
    CHECK(server.connections() == 3);
    CHECK(fallbacks.count() == 0);
  }
  SUBCASE("Connection: close") {
    KeepAliveServer server(
        [](const std::string&) { return Answer{Partial(100, 10, "Connection: close\r\n")}; });
    Fallbacks fallbacks;
    auto direct = Receiver(server.url(), fallbacks);
    std::string buffer;
    for (int i = 0; i < 2; ++i) REQUIRE(Get(*direct, Req(buffer, 100, 10)).ok());
    CHECK(direct->counters().connects == 2);
    CHECK(fallbacks.count() == 0);
  }
}

TEST_CASE("every answer it does not take goes to the fallback, the request unchanged") {
  struct Case {
    const char* what;
    std::string answer;
  };
  const Case cases[] = {
      {"a 200 (Range ignored)", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"},
      {"a 404", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"},
      {"a 503", "HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n"},
      {"a 412", "HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n"},
      {"another range", Partial(0, 10)},
      {"another version",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nContent-Length: 10\r\n"
       "ETag: \"etag2\"\r\n\r\n0123456789"},
      {"chunked",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nTransfer-Encoding: chunked\r\n"
       "ETag: \"etag1\"\r\n\r\n"},
      {"garbage", "SSH-2.0-OpenSSH\r\n\r\n"},
      {"a body cut short",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nContent-Length: 10\r\n"
       "ETag: \"etag1\"\r\n\r\n01234"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    KeepAliveServer server([&c](const std::string&) {
      return Answer{c.answer, Answer::Then::kClose};
    });
    Fallbacks fallbacks;
    auto direct = Receiver(server.url(), fallbacks);
    std::string buffer;
    auto got = Get(*direct, Req(buffer, 100, 10));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().message() == "the fallback's answer");
    REQUIRE(fallbacks.count() == 1);
    const GetObjectRequest& seen = fallbacks.seen.at(0);
    CHECK(seen.key == "dir/a key");
    CHECK(seen.range == ByteRange{100, 10});
    CHECK(seen.buffer.data() == reinterpret_cast<std::byte*>(buffer.data()));
    CHECK(seen.if_match == "\"etag1\"");
    CHECK(direct->counters().fallbacks == 1);
  }
}

TEST_CASE("an unreachable server goes to the fallback") {
  std::string url;
  {
    KeepAliveServer gone([](const std::string&) { return Answer{}; });
    url = gone.url();
  }
  Fallbacks fallbacks;
  auto direct = Receiver(url, fallbacks);
  std::string buffer;
  CHECK_FALSE(Get(*direct, Req(buffer, 100, 10)).ok());
  CHECK(fallbacks.count() == 1);
}

TEST_CASE("a cancel mid-body ends the request with kCancelled, not the fallback") {
  // The head and half the body, then silence (the idle timeout is 30 s).
  const std::string full = Partial(100, 100);
  KeepAliveServer server([&full](const std::string&) {
    return Answer{full.substr(0, full.size() - 50), Answer::Then::kHang};
  });
  Fallbacks fallbacks;
  auto direct = Receiver(server.url(), fallbacks);
  std::string buffer;
  GetObjectRequest req = Req(buffer, 100, 100);
  req.cancel = CancellationToken::Create();
  std::promise<Result<GetObjectResult>> p;
  direct->Submit(req, [&p](Result<GetObjectResult> r) { p.set_value(std::move(r)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  req.cancel->Cancel();
  auto got = p.get_future().get();
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kCancelled);
  CHECK(fallbacks.count() == 0);
}

TEST_CASE("destroying the receiver cancels queued and running requests") {
  KeepAliveServer server([](const std::string&) {
    return Answer{"HTTP/1.1 206 P\r\n", Answer::Then::kHang};
  });
  Fallbacks fallbacks;
  auto direct = Receiver(server.url(), fallbacks);
  constexpr int kRequests = kThreads + 4;  // some wait in the queue
  std::vector<std::string> buffers(kRequests);
  std::atomic<int> cancelled{0}, other{0};
  for (int i = 0; i < kRequests; ++i) {
    direct->Submit(Req(buffers[i], 100, 10), [&](Result<GetObjectResult> r) {
      (!r.ok() && r.status().code() == StatusCode::kCancelled ? cancelled : other)++;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  direct.reset();  // returns once every request has completed
  CHECK(cancelled.load() == kRequests);
  CHECK(other.load() == 0);
  CHECK(fallbacks.count() == 0);
}

TEST_CASE("what it takes: large ranges into buffers over plain http, without a proxy") {
  KeepAliveServer server([](const std::string&) { return Answer{}; });
  Fallbacks fallbacks;
  auto direct = Receiver(server.url(), fallbacks, /*min_bytes=*/1000);
  std::string buffer;
  GetObjectRequest req = Req(buffer, 0, 1000);
  CHECK(direct->Takes(req));
  GetObjectRequest small = Req(buffer, 0, 999);
  CHECK_FALSE(direct->Takes(small));
  GetObjectRequest whole = req;
  whole.range.reset();
  CHECK_FALSE(direct->Takes(whole));
  GetObjectRequest short_buffer = req;
  short_buffer.buffer = req.buffer.first(999);
  CHECK_FALSE(direct->Takes(short_buffer));
  GetObjectRequest sink = req;
  sink.sink = [](std::span<const std::byte>) { return Status::Ok(); };
  CHECK_FALSE(direct->Takes(sink));
  GetObjectRequest rdma = req;
  rdma.extra_headers.emplace_back("x-amz-rdma-token", "t");
  CHECK_FALSE(direct->Takes(rdma));
  GetObjectRequest pinned = req;
  pinned.endpoint = server.url();
  CHECK_FALSE(direct->Takes(pinned));

  TransportOptions tls;
  tls.endpoints = EndpointSet::Create({"https://127.0.0.1:9"}, {}).value();
  CHECK(DirectGet::Create(tls, 1, kThreads, nullptr) == nullptr);
  TransportOptions off;
  off.endpoints = EndpointSet::Create({server.url()}, {}).value();
  CHECK(DirectGet::Create(off, 0, kThreads, nullptr) == nullptr);
  // A proxy for libcurl, or a total time limit only libcurl enforces: nothing is taken here.
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
    CAPTURE(name);
    REQUIRE(::setenv(name, "http://127.0.0.1:3128", 1) == 0);
    CHECK(DirectGet::Create(off, 1, kThreads, nullptr) == nullptr);
    ::unsetenv(name);
  }
  CHECK(DirectGet::Create(off, 1, kThreads, nullptr) != nullptr);
  TransportOptions timed = off;
  timed.total_timeout = std::chrono::milliseconds(60'000);
  CHECK(DirectGet::Create(timed, 1, kThreads, nullptr) == nullptr);
}

}  // namespace
}  // namespace reelfs::s3

// The HTTP head parser of the spliced-read receiver (s3/client/socket_body_source.h), and the
// receiver against a scripted loopback server: what it sends, and each answer it must refuse.
#include "s3/client/socket_body_source.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"
#include "s3/client/endpoint_set.h"
#include "tests/fakes/loopback_listener.h"

namespace reelfs::s3 {
namespace {

TEST_CASE("ParseResponseHead: status, headers lowercased and trimmed, malformed refused") {
  auto h = ParseResponseHead(
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100\r\nETag:  \"abc\" \r\n\r\n");
  REQUIRE(h.ok());
  CHECK(h->status == 206);
  REQUIRE(h->Header("content-range") != nullptr);
  CHECK(*h->Header("content-range") == "bytes 0-9/100");
  CHECK(*h->Header("etag") == "\"abc\"");
  CHECK(h->Header("content-length") == nullptr);
  CHECK(ParseResponseHead("HTTP/1.1 200\r\n\r\n")->status == 200);
  CHECK_FALSE(ParseResponseHead("HTTP/1.1 206 OK\r\n").ok());  // no blank line
  CHECK_FALSE(ParseResponseHead("HTTP/1.1 2x6 OK\r\n\r\n").ok());
  CHECK_FALSE(ParseResponseHead("SMTP 220 hello\r\n\r\n").ok());
  CHECK_FALSE(ParseResponseHead("HTTP/1.1 206 OK\r\nno colon here\r\n\r\n").ok());
  CHECK_FALSE(ParseResponseHead("HTTP/1.1 2066 OK\r\n\r\n").ok());
}

// One connection, one scripted answer; the request it received is kept for the test.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::string answer, bool hang = false) {
    listener_ = testing::ListenOnLoopback(4, &port_);
    REQUIRE(listener_.valid());
    thread_ = std::thread([this, answer = std::move(answer), hang] {
      UniqueFd conn(::accept(listener_.get(), nullptr, nullptr));
      if (!conn.valid()) return;
      char buf[8192];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(conn.get(), buf, sizeof(buf), 0);
        if (n <= 0) return;
        request_.append(buf, static_cast<size_t>(n));
      }
      ::send(conn.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
      if (hang) {
        // Keep the connection open and silent until the client goes away.
        while (::recv(conn.get(), buf, sizeof(buf), 0) > 0) {
        }
      }
    });
  }
  ~ScriptedServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& request() const { return request_; }

 private:
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::string request_;
  std::thread thread_;
};

std::unique_ptr<BodySource> SourceFor(const std::string& url) {
  TransportOptions o;
  o.endpoints = EndpointSet::Create({url}, {}).value();
  o.endpoint = o.endpoints->endpoint(0);
  o.credentials = {"AKIDEXAMPLE", "secret", ""};
  o.idle_timeout = std::chrono::milliseconds(5000);
  return CreateSocketBodySource(o);
}

const BodyStreamRequest kReq{"bucket", "dir/a key", {100, 10}, "\"etag1\"", nullptr};

TEST_CASE("a 206 of the range asked for: the body is left in the socket") {
  ScriptedServer server(
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-109/1000\r\n"
      "Content-Length: 10\r\nETag: \"etag1\"\r\n\r\n0123456789");
  auto stream = SourceFor(server.url())->Open(kReq);
  REQUIRE_MESSAGE(stream.ok(), stream.status().ToString());
  CHECK((*stream)->offset() == 100);
  CHECK((*stream)->remaining() == 10);
  char body[11] = {};
  size_t n = 0;
  while (n < 10) {
    const ssize_t r = ::recv((*stream)->fd(), body + n, 10 - n, 0);
    REQUIRE(r > 0);
    n += static_cast<size_t>(r);
  }
  CHECK(std::string(body) == "0123456789");
  const std::string& req = server.request();
  CHECK(req.starts_with("GET /bucket/dir/a%20key HTTP/1.1\r\n"));
  CHECK(req.find("range: bytes=100-109\r\n") != std::string::npos);
  CHECK(req.find("if-match: \"etag1\"\r\n") != std::string::npos);
  CHECK(req.find("authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") != std::string::npos);
}

TEST_CASE("answers that cannot be spliced are refused, never taken as the body") {
  struct Case {
    const char* what;
    std::string answer;
    StatusCode code;
  };
  const Case cases[] = {
      {"a 200", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", StatusCode::kUnavailable},
      {"an error", "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", StatusCode::kUnavailable},
      {"another range",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 0-9/1000\r\nContent-Length: 10\r\n"
       "ETag: \"etag1\"\r\n\r\n",
       StatusCode::kDataLoss},
      {"a longer range",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-199/1000\r\nContent-Length: 100\r\n"
       "ETag: \"etag1\"\r\n\r\n",
       StatusCode::kDataLoss},
      {"another version",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nContent-Length: 10\r\n"
       "ETag: \"etag2\"\r\n\r\n",
       StatusCode::kFailedPrecondition},
      {"chunked",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nTransfer-Encoding: chunked\r\n"
       "ETag: \"etag1\"\r\n\r\n",
       StatusCode::kUnavailable},
      {"no Content-Length",
       "HTTP/1.1 206 P\r\nContent-Range: bytes 100-109/1000\r\nETag: \"etag1\"\r\n\r\n",
       StatusCode::kDataLoss},
      {"garbage", "SSH-2.0-OpenSSH\r\n\r\n", StatusCode::kDataLoss},
      {"a head cut short", "HTTP/1.1 206 P\r\nContent-Ra", StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ScriptedServer server(c.answer);
    auto stream = SourceFor(server.url())->Open(kReq);
    REQUIRE_FALSE(stream.ok());
    CHECK(stream.status().code() == c.code);
  }
}

TEST_CASE("a cancel cuts a head read that waits on a silent server") {
  ScriptedServer server("", /*hang=*/true);
  auto token = CancellationToken::Create();
  BodyStreamRequest req = kReq;
  req.cancel = token;
  std::thread canceller([token] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token->Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto stream = SourceFor(server.url())->Open(req);
  const auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  REQUIRE_FALSE(stream.ok());
  CHECK(stream.status().code() == StatusCode::kCancelled);
  MESSAGE("Open returned after ", std::chrono::duration<double>(took).count(),
          " s: ", stream.status().ToString());
  CHECK(took < std::chrono::milliseconds(4000));  // well before the 5 s idle timeout
}

TEST_CASE("https endpoints, or a proxy for libcurl, get no receiver") {
  TransportOptions o;
  o.endpoints = EndpointSet::Create({"https://127.0.0.1:9"}, {}).value();
  CHECK(CreateSocketBodySource(o) == nullptr);
  TransportOptions plain;
  plain.endpoints = EndpointSet::Create({"http://127.0.0.1:9"}, {}).value();
  CHECK(CreateSocketBodySource(plain) != nullptr);
  REQUIRE(::setenv("http_proxy", "http://127.0.0.1:3128", 1) == 0);
  CHECK(CreateSocketBodySource(plain) == nullptr);
  ::unsetenv("http_proxy");
}

}  // namespace
}  // namespace reelfs::s3

// Transport behaviour that needs a misbehaving server: a scripted one-connection-at-a-time HTTP
// server on loopback (each response closes its connection).
#include "s3/client/transport.h"

#include <unistd.h>

#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"

using namespace reelfs;
using namespace reelfs::s3;
using namespace std::chrono_literals;

namespace {

// Answers each request with the next scripted response (raw bytes), then closes the connection.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> responses) : responses_(std::move(responses)) {
    listen_ = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    REQUIRE(listen(listen_.get(), 16) == 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listen_.get(), SHUT_RDWR);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    for (const std::string& response : responses_) {
      UniqueFd conn(accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn.valid()) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(conn.get(), buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
      }
      size_t off = 0;
      while (off < response.size()) {
        const ssize_t n = write(conn.get(), response.data() + off, response.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
    }
  }

  std::vector<std::string> responses_;
  UniqueFd listen_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> requests_;  // guarded by mu_
  std::thread thread_;                 // last: joined first
};

std::string Body(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

std::unique_ptr<Transport> MakeTransport(int port, int max_attempts = 4) {
  TransportOptions o;
  o.endpoint = Endpoint{"http", "127.0.0.1", port, ""};
  o.credentials = {"AKID", "secret", ""};
  o.retry = {.max_attempts = max_attempts, .base = 1ms, .cap = 5ms};
  auto t = Transport::Create(o);
  REQUIRE(t.ok());
  return std::move(t).value();
}

Result<HttpResponse> Run(Transport& t, HttpRequest req) {
  std::promise<Result<HttpResponse>> p;
  auto f = p.get_future();
  t.Submit(std::move(req), [&](Result<HttpResponse> r) { p.set_value(std::move(r)); });
  return f.get();
}

HttpRequest StreamGet(std::span<std::byte> buf, std::optional<ByteRange> range) {
  HttpRequest r;
  r.bucket = "b";
  r.key = "k";
  r.stream_body = true;
  r.buffer = buf;
  r.range = range;
  return r;
}

bool Has(const std::string& hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("connection refused: retried up to max_attempts, then kUnavailable") {
  int port = 0;
  {
    ScriptedServer probe({});  // grab a free port, then close it
    port = probe.port();
  }
  auto t = MakeTransport(port, 3);
  HttpRequest req;
  req.bucket = "b";
  req.key = "k";
  auto r = Run(*t, req);
  CHECK(r.status().code() == StatusCode::kUnavailable);
  CHECK(t->counters().attempts == 3);
  CHECK(t->counters().retries == 2);
  CHECK(t->counters().failures == 1);
}

TEST_CASE("a 200 answer to a ranged GET is sliced to the range") {
  const std::string body = Body(1000);
  ScriptedServer server({"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"e1\"\r\n\r\n" + body});
  auto t = MakeTransport(server.port());
  std::vector<std::byte> buf(50);
  auto r = Run(*t, StreamGet(buf, ByteRange{100, 50}));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->streamed_bytes == 50);
  CHECK(r->object_size == 1000);
  CHECK(std::string(reinterpret_cast<char*>(buf.data()), 50) == body.substr(100, 50));
  CHECK(Has(server.requests()[0], "range: bytes=100-149"));
}

TEST_CASE("a broken body resumes with an adjusted Range and If-Match") {
  const std::string body = Body(1000);
  ScriptedServer server({
      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"e1\"\r\n\r\n" + body.substr(0, 400),
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 600\r\nContent-Range: bytes 400-999/1000"
      "\r\nETag: \"e1\"\r\n\r\n" +
          body.substr(400),
  });
  auto t = MakeTransport(server.port());
  std::vector<std::byte> buf(1000);
  auto r = Run(*t, StreamGet(buf, std::nullopt));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->streamed_bytes == 1000);
  CHECK(std::string(reinterpret_cast<char*>(buf.data()), 1000) == body);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK_FALSE(Has(reqs[0], "range:"));
  CHECK(Has(reqs[1], "range: bytes=400-999"));
  CHECK(Has(reqs[1], "if-match: \"e1\""));
  CHECK(t->counters().retries == 1);
}

TEST_CASE("resume of a ranged GET keeps the original offset") {
  const std::string body = Body(1000);
  ScriptedServer server({
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 300\r\nContent-Range: bytes 100-399/1000"
      "\r\nETag: \"e1\"\r\n\r\n" +
          body.substr(100, 120),
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 180\r\nContent-Range: bytes 220-399/1000"
      "\r\nETag: \"e1\"\r\n\r\n" +
          body.substr(220, 180),
  });
  auto t = MakeTransport(server.port());
  std::vector<std::byte> buf(300);
  auto r = Run(*t, StreamGet(buf, ByteRange{100, 300}));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->streamed_bytes == 300);
  CHECK(std::string(reinterpret_cast<char*>(buf.data()), 300) == body.substr(100, 300));
  CHECK(Has(server.requests()[1], "range: bytes=220-399"));
}

TEST_CASE("503 SlowDown is retried; 404 is not; error documents are decoded") {
  const std::string slow =
      "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>easy</Message>"
      "<RequestId>R1</RequestId></Error>";
  const std::string missing =
      "<Error><Code>NoSuchKey</Code><Message>gone</Message><RequestId>R2</RequestId></Error>";
  ScriptedServer server({
      "HTTP/1.1 503 Slow Down\r\nContent-Length: " + std::to_string(slow.size()) + "\r\n\r\n" +
          slow,
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 404 Not Found\r\nContent-Length: " + std::to_string(missing.size()) + "\r\n\r\n" +
          missing,
  });
  auto t = MakeTransport(server.port());
  HttpRequest req;
  req.bucket = "b";
  req.key = "k";
  auto ok = Run(*t, req);
  REQUIRE_MESSAGE(ok.ok(), ok.status().ToString());
  CHECK(ok->body == "ok");
  CHECK(t->counters().retries == 1);
  auto nf = Run(*t, req);
  CHECK(nf.status().code() == StatusCode::kNotFound);
  CHECK(nf.status().detail().s3_code == "NoSuchKey");
  CHECK(nf.status().detail().request_id == "R2");
  CHECK(nf.status().detail().http_status == 404);
  CHECK(t->counters().retries == 1);  // the 404 was not retried
}

TEST_CASE("requests are signed and carry the payload hash") {
  ScriptedServer server({"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"});
  auto t = MakeTransport(server.port());
  HttpRequest req;
  req.method = "PUT";
  req.bucket = "b";
  req.key = "k";
  req.owned_body = "hello";
  req.content_md5 = true;
  auto r = Run(*t, req);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  const std::string sent = server.requests()[0];
  CHECK(Has(sent, "PUT /b/k HTTP/1.1"));
  CHECK(Has(sent, "authorization: AWS4-HMAC-SHA256 Credential=AKID/"));
  // sha256("hello")
  CHECK(Has(sent,
            "x-amz-content-sha256: "
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"));
  CHECK(Has(sent, "content-md5: XUFAKrxLKna5cZ2REBfFkg=="));
  CHECK_FALSE(Has(sent, "Expect:"));
}

TEST_CASE("shutdown completes pending retries with kCancelled") {
  int port = 0;
  {
    ScriptedServer probe({});
    port = probe.port();
  }
  TransportOptions o;
  o.endpoint = Endpoint{"http", "127.0.0.1", port, ""};
  o.retry = {.max_attempts = 10, .base = 10s, .cap = 10s};
  o.jitter = [] { return 0.99; };
  auto t = Transport::Create(o);
  REQUIRE(t.ok());
  std::promise<Status> p;
  HttpRequest req;
  req.bucket = "b";
  (*t)->Submit(req, [&](Result<HttpResponse> r) { p.set_value(r.status()); });
  std::this_thread::sleep_for(200ms);  // first attempt refused, retry waiting 9.9 s
  t->reset();
  auto f = p.get_future();
  REQUIRE(f.wait_for(1s) == std::future_status::ready);
  CHECK(f.get().code() == StatusCode::kCancelled);
}

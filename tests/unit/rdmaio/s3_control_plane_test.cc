// S3ControlPlane (rdmaio/s3bridge) against a scripted HTTP server on loopback: what the RC channel
// sends (extra signed headers on a ranged GET, POSTs to /.hipobj-rc/*) and what it gets back
// (x-amz-rdma-* headers of an empty-bodied answer, a body placed in the destination, an error
// answer as a status rather than a failure, no answer as a failure), and the PUTs: an RDMA PUT
// (signed token headers, empty body, sent once) and the HTTP fallback PUT (the payload).
#include "rdmaio/s3bridge/s3_control_plane.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/strings.h"
#include "common/unique_fd.h"
#include "rdmaio/channel/channel_replies.h"
#include "tests/fakes/loopback_listener.h"

namespace reelfs::rdmaio::s3bridge {
namespace {

// Answers each connection's first request with the next canned response and closes it; keeps the
// request heads it saw and their bodies (Content-Length bytes).
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> responses) : responses_(std::move(responses)) {
    listener_ = testing::ListenOnLoopback(8, &port_);
    REQUIRE(listener_.valid());
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::vector<std::string> heads() {
    std::lock_guard lock(mu_);
    return heads_;
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }

 private:
  void Serve() {
    for (const std::string& response : responses_) {
      UniqueFd conn(::accept(listener_.get(), nullptr, nullptr));
      if (conn.get() < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(conn.get(), buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      const size_t end = head.find("\r\n\r\n");
      std::string body = end == std::string::npos ? std::string() : head.substr(end + 4);
      const std::string lower = Lower(head.substr(0, end));
      const size_t at = lower.find("content-length:");
      const size_t length =
          at == std::string::npos ? 0 : std::stoul(lower.substr(at + 15, lower.find('\r', at)));
      while (body.size() < length) {
        ssize_t n = ::read(conn.get(), buf, sizeof(buf));
        if (n <= 0) break;
        body.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        heads_.push_back(head.substr(0, end == std::string::npos ? head.size() : end + 4));
        bodies_.push_back(body);
      }
      if (response.empty()) continue;  // close without answering
      (void)!::write(conn.get(), response.data(), response.size());
    }
  }

  std::vector<std::string> responses_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> heads_;
  std::vector<std::string> bodies_;
};

std::unique_ptr<S3ControlPlane> MakePlane(uint16_t port, int attempts = 1) {
  s3::ClientOptions options;
  options.endpoint = "http://127.0.0.1:" + std::to_string(port);
  options.credentials = {"AKIDEXAMPLE", "secret", ""};
  options.retry.max_attempts = attempts;
  options.retry.base = std::chrono::milliseconds(1);
  auto client = s3::S3Client::Create(options);
  REQUIRE(client.ok());
  auto plane =
      S3ControlPlane::Create(std::shared_ptr<s3::ObjectStore>(std::move(*client)), options);
  REQUIRE(plane.ok());
  return std::move(plane).value();
}

Result<ControlReply> Wait(std::function<void(ControlCallback)> start) {
  std::promise<Result<ControlReply>> promise;
  start([&promise](Result<ControlReply> r) { promise.set_value(std::move(r)); });
  return promise.get_future().get();
}

// A GET of b/k into the whole window with one token header: the request most cases send.
Result<ControlReply> GetWithToken(S3ControlPlane& plane, std::span<std::byte> window) {
  return Wait([&](ControlCallback cb) {
    plane.Get({.bucket = "b",
               .key = "k",
               .length = window.size(),
               .headers = {{"x-amz-rdma-token", "t"}},
               .destination = window},
              cb);
  });
}

bool HasLine(const std::string& head, const std::string& line) {
  return head.find(line + "\r\n") != std::string::npos;
}

TEST_CASE("an RDMA GET: extra headers signed, empty 206 answer with its x-amz-rdma-* headers") {
  ScriptedServer server({
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 0\r\nContent-Range: bytes 100-1123/5000\r\n"
      "ETag: \"abc\"\r\nx-amz-rdma-reply: 206\r\nx-amz-rdma-bytes-transferred: 1024\r\n"
      "Connection: close\r\n\r\n",
  });
  auto plane = MakePlane(server.port());
  std::vector<std::byte> window(1024, std::byte{0x5a});
  auto reply = Wait([&](ControlCallback cb) {
    plane->Get({.bucket = "b",
                .key = "dir/k",
                .offset = 100,
                .length = 1024,
                .headers = {{"x-amz-rdma-token", "t0k3n"}, {"x-amz-rdma-session", "s1"}},
                .destination = window},
               cb);
  });
  REQUIRE_MESSAGE(reply.ok(), reply.status().ToString());
  CHECK(reply->http_status == 206);
  CHECK(reply->body_bytes == 0);
  CHECK(reply->object_size == 5000);
  CHECK(reply->etag == "abc");
  REQUIRE(reply->rdma_headers.size() == 2);
  CHECK(reply->rdma_headers[0] == std::pair<std::string, std::string>("x-amz-rdma-reply", "206"));
  CHECK(window[0] == std::byte{0x5a});  // untouched: the bytes came "over RDMA"
  const std::string head = server.heads().at(0);
  CHECK(head.starts_with("GET /b/dir/k "));
  CHECK(HasLine(head, "x-amz-rdma-token: t0k3n"));
  CHECK(HasLine(head, "range: bytes=100-1123"));
  CHECK(head.find("x-amz-rdma-session;x-amz-rdma-token") != std::string::npos);  // signed
}

TEST_CASE("a token-ignoring server: the 200 body is sliced to the range into the destination") {
  std::string object(300, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>('a' + i % 26);
  ScriptedServer server(
      {"HTTP/1.1 200 OK\r\nContent-Length: 300\r\nConnection: close\r\n\r\n" + object});
  auto plane = MakePlane(server.port());
  std::vector<std::byte> window(64);
  auto reply = Wait([&](ControlCallback cb) {
    plane->Get({.bucket = "b",
                .key = "k",
                .offset = 10,
                .length = 64,
                .headers = {{"x-amz-rdma-token", "t"}},
                .destination = window},
               cb);
  });
  REQUIRE(reply.ok());
  CHECK(reply->http_status == 200);  // the answer's own status, not a guess
  CHECK(reply->body_bytes == 64);
  CHECK(reply->object_size == 300);
  CHECK(reply->rdma_headers.empty());
  CHECK(std::memcmp(window.data(), object.data() + 10, 64) == 0);
}

TEST_CASE("an error answer is a reply with its status and code; no answer is a failure") {
  const std::string error =
      "<?xml version=\"1.0\"?><Error><Code>S3RdmaNotSupported</Code><Message>x</Message>"
      "</Error>";
  ScriptedServer server({
      "HTTP/1.1 501 Not Implemented\r\nContent-Type: application/xml\r\nContent-Length: " +
          std::to_string(error.size()) + "\r\nConnection: close\r\n\r\n" + error,
      "",
  });
  auto plane = MakePlane(server.port());
  std::vector<std::byte> window(16);
  auto get = [&] { return GetWithToken(*plane, window); };
  auto declined = get();
  REQUIRE(declined.ok());
  CHECK(declined->http_status == 501);
  CHECK(declined->s3_error_code == "S3RdmaNotSupported");
  // The s3 layer's Status of the answer rides along, as s3 made it.
  CHECK(declined->error.code() == StatusCode::kUnimplemented);
  CHECK(declined->error.detail().http_status == 501);
  CHECK(declined->error.detail().s3_code == "S3RdmaNotSupported");
  auto lost = get();
  CHECK_FALSE(lost.ok());
}

TEST_CASE("a bad-signature 403 reaches the channel as kUnauthenticated, as over HTTP") {
  // Before the shared table the channel read any 403 but InvalidObjectState as
  // kPermissionDenied; the S3 layer says kUnauthenticated, and that Status is what goes up.
  const std::string error =
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message>"
      "</Error>";
  const std::string archived =
      "<?xml version=\"1.0\"?><Error><Code>InvalidObjectState</Code><Message>x</Message>"
      "</Error>";
  auto answer = [](int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/xml\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  };
  ScriptedServer server({answer(403, error), answer(403, archived)});
  auto plane = MakePlane(server.port());
  std::vector<std::byte> window(16);
  auto get = [&] {
    return Wait([&](ControlCallback cb) {
      plane->Get({.bucket = "b", .key = "k", .length = 16, .destination = window}, cb);
    });
  };
  auto bad_signature = get();
  REQUIRE(bad_signature.ok());
  CHECK(bad_signature->http_status == 403);
  const Status unauthenticated = channel::ErrorFromReply(*bad_signature, "GET b/k");
  CHECK(unauthenticated.code() == StatusCode::kUnauthenticated);
  CHECK(unauthenticated.detail().s3_code == "SignatureDoesNotMatch");
  CHECK(unauthenticated.message().starts_with("GET b/k: "));
  auto cold = get();
  REQUIRE(cold.ok());
  const Status archived_status = channel::ErrorFromReply(*cold, "GET b/k");
  CHECK(archived_status.code() == StatusCode::kFailedPrecondition);
  CHECK(archived_status.reason() == StatusReason::kArchived);
}

TEST_CASE("an RDMA GET is never retried by the S3 client (a timed-out attempt must be fenced)") {
  const std::string busy =
      "HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  ScriptedServer server({busy, busy});
  auto plane = MakePlane(server.port(), /*attempts=*/3);
  std::vector<std::byte> window(16);
  auto reply = GetWithToken(*plane, window);
  REQUIRE(reply.ok());
  CHECK(reply->http_status == 503);
  CHECK(server.heads().size() == 1);
}

TEST_CASE("POST /.hipobj-rc/prepare: the path, the signed control headers, the reply headers") {
  ScriptedServer server({
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nx-amz-rdma-reply: 200:abc\r\n"
      "x-amz-rdma-session: s9\r\nConnection: close\r\n\r\n",
  });
  auto plane = MakePlane(server.port());
  auto reply = Wait([&](ControlCallback cb) {
    plane->Post({.path = "/.hipobj-rc/prepare",
                 .headers = {{"x-amz-rdma-protocol", "hipobj-rc-v2"}, {"x-amz-rdma-op", "GET"}}},
                cb);
  });
  REQUIRE(reply.ok());
  CHECK(reply->http_status == 200);
  REQUIRE(reply->rdma_headers.size() == 2);
  CHECK(reply->rdma_headers[1].second == "s9");
  const std::string head = server.heads().at(0);
  CHECK(head.starts_with("POST /.hipobj-rc/prepare "));
  CHECK(HasLine(head, "x-amz-rdma-op: GET"));
  CHECK(head.find("x-amz-rdma-op;x-amz-rdma-protocol") != std::string::npos);
}

TEST_CASE("an RDMA UploadPart: signed token headers, empty body, the answer's rdma headers") {
  ScriptedServer server({
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"p2\"\r\nx-amz-rdma-reply: 200\r\n"
      "x-amz-rdma-bytes-transferred: 4096\r\nx-amz-rdma-cookie: 00000000000000aa\r\n"
      "Connection: close\r\n\r\n",
  });
  auto plane = MakePlane(server.port());
  auto reply = Wait([&](ControlCallback cb) {
    plane->Put({.bucket = "b",
                .key = "dir/k",
                .part_number = 2,
                .upload_id = "u1",
                .headers = {{"x-amz-rdma-token", "t0k3n"},
                            {"x-amz-rdma-session", "s1"},
                            {"x-amz-rdma-size", "4096"}}},
               cb);
  });
  REQUIRE_MESSAGE(reply.ok(), reply.status().ToString());
  CHECK(reply->http_status == 200);
  CHECK(reply->etag == "p2");
  REQUIRE(reply->rdma_headers.size() == 3);
  CHECK(reply->rdma_headers[1].second == "4096");
  const std::string head = server.heads().at(0);
  CHECK(head.starts_with("PUT /b/dir/k?"));
  CHECK(head.find("partNumber=2") != std::string::npos);
  CHECK(head.find("uploadId=u1") != std::string::npos);
  CHECK(HasLine(head, "x-amz-rdma-size: 4096"));
  CHECK(HasLine(head, "Content-Length: 0"));
  CHECK(head.find("x-amz-rdma-session;x-amz-rdma-size;x-amz-rdma-token") != std::string::npos);
  CHECK(server.bodies().at(0).empty());
}

TEST_CASE("an RDMA PUT is sent once; its error answer keeps status and code") {
  const std::string busy =
      "HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  const std::string error =
      "<?xml version=\"1.0\"?><Error><Code>InvalidArgument</Code><Message>x</Message></Error>";
  ScriptedServer server({
      busy,
      "HTTP/1.1 400 Bad Request\r\nContent-Type: application/xml\r\nContent-Length: " +
          std::to_string(error.size()) + "\r\nConnection: close\r\n\r\n" + error,
  });
  auto plane = MakePlane(server.port(), /*attempts=*/3);
  auto put = [&] {
    return Wait([&](ControlCallback cb) {
      plane->Put({.bucket = "b", .key = "k", .headers = {{"x-amz-rdma-token", "t"}}}, cb);
    });
  };
  auto first = put();
  REQUIRE(first.ok());
  CHECK(first->http_status == 503);
  CHECK(server.heads().size() == 1);  // not retried
  auto second = put();
  REQUIRE(second.ok());
  CHECK(second->http_status == 400);
  CHECK(second->s3_error_code == "InvalidArgument");
}

TEST_CASE("the HTTP fallback PUT sends the payload through the store and returns the ETag") {
  ScriptedServer server({
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"obj1\"\r\nConnection: close\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"part3\"\r\nConnection: close\r\n\r\n",
  });
  auto plane = MakePlane(server.port());
  std::string payload(5000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31 % 251);
  const auto body = std::as_bytes(std::span<const char>(payload));
  auto object = Wait([&](ControlCallback cb) {
    plane->Put({.bucket = "b", .key = "k", .body = body, .content_type = "text/plain"}, cb);
  });
  REQUIRE_MESSAGE(object.ok(), object.status().ToString());
  CHECK(object->http_status == 200);
  CHECK(object->etag == "obj1");
  auto part = Wait([&](ControlCallback cb) {
    plane->Put({.bucket = "b", .key = "k", .part_number = 3, .upload_id = "u7", .body = body}, cb);
  });
  REQUIRE(part.ok());
  CHECK(part->etag == "part3");
  const auto heads = server.heads();
  const auto bodies = server.bodies();
  REQUIRE(heads.size() == 2);
  CHECK(heads[0].starts_with("PUT /b/k "));
  CHECK(HasLine(heads[0], "content-type: text/plain"));
  CHECK(heads[0].find("x-amz-rdma-") == std::string::npos);
  CHECK(heads[1].find("partNumber=3") != std::string::npos);
  CHECK(bodies[0] == payload);
  CHECK(bodies[1] == payload);
}

TEST_CASE("an UploadPart with a part number out of range is refused before sending") {
  ScriptedServer server({});
  auto plane = MakePlane(server.port());
  auto reply = Wait([&](ControlCallback cb) {
    plane->Put({.bucket = "b", .key = "k", .part_number = 10'001, .upload_id = "u"}, cb);
  });
  CHECK(reply.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reelfs::rdmaio::s3bridge

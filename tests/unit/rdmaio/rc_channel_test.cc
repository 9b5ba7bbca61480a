// RcChannel's protocol logic against fakes: a control plane that plays a hipobj-rc-v2 gateway (or
// a server that declines, fails, ignores the token or never answers) and fake queue pairs whose
// "RDMA writes" (GET) and "RDMA reads" (PUT) are memcpy into / out of the window, allowed only
// while the client QP is connected and not fenced. No device needed; the same logic runs over
// real verbs in tests/rdma.
#include "rdmaio/channel/rc_channel.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "rdmaio/wire/rc_control.h"
#include "rdmaio/wire/rdma_headers.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/host_region.h"

namespace reelfs::rdmaio::channel {
namespace {

using wire::HeaderList;

using FakeRegion = testing::FakeHostRegion;

class FakeQp;
// What the fake QPs did, kept by the provider: each QP is owned (and destroyed) by its session,
// so a test asks the book, never a QP that may be gone.
struct QpBook {
  std::map<uint32_t, FakeQp*> live;  // by qpn, until the QP is destroyed
  std::set<uint32_t> fenced;         // qpns that were ever fenced
  int created = 0;
};

class FakeQp final : public RcSessionQp {
 public:
  FakeQp(uint32_t qpn, QpBook& book) : book_(book) {
    local_.qpn = qpn;
    local_.psn = 0x123;
    book_.live[qpn] = this;
    ++book_.created;
  }
  ~FakeQp() override { book_.live.erase(local_.qpn); }
  const RcEndpoint& local() const override { return local_; }
  Status Connect(const RcEndpoint& remote) override {
    remote_ = remote;
    connected = true;
    return Status::Ok();
  }
  Status PostRecv(uint64_t) override {
    ++receives_posted;
    return Status::Ok();
  }
  Result<int> ReapReceives() override {
    if (fail_reap) return Status::Unavailable("flushed");
    const int n = receives_consumed;
    receives_consumed = 0;
    return n;
  }
  Status Fence() override {
    fenced = true;
    book_.fenced.insert(local_.qpn);
    return Status::Ok();
  }

  QpBook& book_;

  RcEndpoint local_;
  RcEndpoint remote_;
  bool connected = false;
  bool fenced = false;
  bool fail_reap = false;
  int receives_posted = 0;
  int receives_consumed = 0;
};

// Qps by number, so the fake server finds the client QP a token names.
class FakeProvider final : public RcQpProvider {
 public:
  Result<std::unique_ptr<RcSessionQp>> CreateQp() override {
    if (fail_create) return Status::ResourceExhausted("no QPs left");
    return std::unique_ptr<RcSessionQp>(std::make_unique<FakeQp>(next_qpn++, book));
  }
  Result<WindowAddress> Locate(const RegisteredWindow& window) const override {
    return testing::LocateFakeWindow(window);
  }
  MemoryRegistrar& registrar() override { throw std::logic_error("unused"); }

  QpBook book;
  std::map<uint32_t, FakeQp*>& qps = book.live;  // the QPs alive now
  uint32_t next_qpn = 0x100;
  bool fail_create = false;
};

enum class Mode {
  kRc,            // serves PREPARE / READY / data GETs with a session
  kPlainS3,       // PREPARE: 400 InvalidBucketName; GET: ignores the token, body
  kPrepare501,    // hipobj-rc unsupported
  kReadyTimeout,  // READY never answers
  kGet500,        // data GETs with a token: 500 (vgwrdma's answer to any RDMA problem)
  kGet501Body,    // data GETs with a token: reply 501 and the object in the body (draft spec)
  kGetNoAnswer,   // data GETs with a token: no answer (timeout)
  kPutNoAnswer,   // session PUTs: no answer (timeout)
  kPutUnmarked,   // session PUTs: stored as sent (0 bytes), 200 + ETag, no x-amz-rdma-reply
};

// What one PUT / UploadPart the server received looked like.
struct SeenPut {
  std::string target;  // "/bucket/key" [+ "?partNumber=N&uploadId=U"]
  bool token = false;  // carried x-amz-rdma-token
  uint64_t body_bytes = 0;
};

std::string StoreKey(std::string_view bucket, std::string_view key, int part,
                     std::string_view upload_id) {
  std::string out = fmt::format("/{}/{}", bucket, key);
  if (part > 0) out += fmt::format("?partNumber={}&uploadId={}", part, upload_id);
  return out;
}

class FakeGateway final : public ControlPlane {
 public:
  FakeGateway(FakeProvider& qps, std::vector<std::byte> object) : qps_(qps), object_(object) {}

  const std::string& endpoint() const override { return endpoint_; }

  void Get(ControlGet request, ControlCallback done) override {
    Defer([this, request = std::move(request), done = std::move(done)]() mutable {
      done(ServeGet(std::move(request)));
    });
  }
  void Post(ControlPost request, ControlCallback done) override {
    Defer([this, request = std::move(request), done = std::move(done)]() mutable {
      done(ServePost(request));
    });
  }
  void Put(ControlPut request, ControlCallback done) override {
    Defer([this, request = std::move(request), done = std::move(done)]() mutable {
      done(ServePut(request));
    });
  }

  // Runs deferred answers until none is left.
  void RunAll() {
    while (!deferred_.empty()) {
      auto next = std::move(deferred_.front());
      deferred_.pop_front();
      next();
    }
  }

  Mode mode = Mode::kRc;
  bool defer = false;
  int prepares = 0, readies = 0, cancels = 0, rdma_gets = 0, plain_gets = 0;
  int refused_posts = 0;  // PREPARE / READY answered as a server without hipobj-rc-v2
  std::vector<wire::RcPrepareRequest> prepared_requests;
  std::vector<SeenPut> puts;                             // every PUT request received
  std::map<std::string, std::vector<std::byte>> stored;  // by StoreKey

 private:
  struct Prepared {
    wire::RcPrepareRequest request;
    bool ready = false;
  };

  void Defer(std::function<void()> call) {
    if (defer) {
      deferred_.push_back(std::move(call));
    } else {
      call();
    }
  }

  // What the server's RDMA WRITE does: only through a connected, unfenced client QP.
  Result<uint64_t> Write(const wire::RcToken& token, uint64_t offset, uint64_t size) {
    auto it = qps_.qps.find(token.qpn);
    if (it == qps_.qps.end() || !it->second->connected || it->second->fenced) {
      return Status::Unavailable("client QP not reachable");
    }
    const uint64_t n = offset < object_.size() ? std::min(size, object_.size() - offset) : 0;
    std::memcpy(reinterpret_cast<void*>(token.addr), object_.data() + offset, n);
    ++it->second->receives_consumed;  // the final WRITE_WITH_IMM
    return n;
  }

  Result<ControlReply> ServePost(const ControlPost& post) {
    ControlReply reply;
    if (post.path == wire::kRcCancelPath) {
      ++cancels;
      reply.http_status = 204;
      return reply;
    }
    if (mode == Mode::kPlainS3) {
      ++refused_posts;
      return ControlReply{.http_status = 400, .s3_error_code = "InvalidBucketName"};
    }
    if (mode == Mode::kPrepare501) {
      ++refused_posts;
      return ControlReply{.http_status = 501};
    }
    if (post.path == wire::kRcPreparePath) {
      ++prepares;
      auto request = wire::DecodeRcPrepare(post.headers);
      REQUIRE(request.ok());
      prepared_requests.push_back(*request);
      const std::string session = fmt::format("s{}", prepares);
      sessions_[session] = Prepared{.request = *request};
      wire::RcToken server{.qpn = 0x900, .rkey = 0x77, .addr = 0x10000, .length = 1 << 20};
      auto headers = wire::EncodeRcPrepareReply({.server_token = server,
                                                 .session = session,
                                                 .psn = 0x42,
                                                 .qpn = 0x900,
                                                 .mr_addr = 0x10000,
                                                 .mr_rkey = 0x77});
      REQUIRE(headers.ok());
      reply.http_status = 200;
      reply.rdma_headers = *headers;
      return reply;
    }
    REQUIRE(post.path == wire::kRcReadyPath);
    ++readies;
    if (mode == Mode::kReadyTimeout) return Status::DeadlineExceeded("READY: no answer");
    auto ready = wire::DecodeRcReady(post.headers);
    REQUIRE(ready.ok());
    Prepared& prepared = sessions_.at(ready->session);
    REQUIRE(ready->cookie == prepared.request.cookie);
    prepared.ready = true;
    if (prepared.request.op == wire::RcOp::kPut) {
      // Stored under the target, whole or not at all.
      auto read = Read(prepared.request.token, prepared.request.size);
      if (!read.ok()) return ControlReply{.http_status = 500};
      const std::string etag = Store(prepared.request.target, std::move(*read));
      auto headers = wire::EncodeRcReadyReply({.bytes_transferred = prepared.request.size,
                                               .cookie = ready->cookie,
                                               .etag = "\"" + etag + "\""});
      REQUIRE(headers.ok());
      reply.http_status = 200;
      reply.rdma_headers = *headers;
      reply.etag = etag;
      return reply;
    }
    auto moved = Write(prepared.request.token, prepared.request.offset, prepared.request.size);
    if (!moved.ok()) return ControlReply{.http_status = 500};
    auto headers = wire::EncodeRcReadyReply(
        {.bytes_transferred = *moved, .cookie = ready->cookie, .etag = "e1"});
    REQUIRE(headers.ok());
    if (send_object_size)
      headers->emplace_back("x-amz-rdma-object-size", std::to_string(object_.size()));
    reply.http_status = 200;
    reply.rdma_headers = *headers;
    return reply;
  }

 public:
  bool send_object_size = true;  // GET READY answers carry x-amz-rdma-object-size

 private:
  // What the server's RDMA READ does: only through a connected, unfenced client QP.
  Result<std::vector<std::byte>> Read(const wire::RcToken& token, uint64_t size) {
    auto it = qps_.qps.find(token.qpn);
    if (it == qps_.qps.end() || !it->second->connected || it->second->fenced) {
      return Status::Unavailable("client QP not reachable");
    }
    REQUIRE(size <= token.length);
    const auto* from = reinterpret_cast<const std::byte*>(token.addr);
    return std::vector<std::byte>(from, from + size);
  }

  std::string Store(const std::string& key, std::vector<std::byte> bytes) {
    const std::string etag = fmt::format("etag-{}-{}", stored.size(), bytes.size());
    stored[key] = std::move(bytes);
    return etag;
  }

  Result<ControlReply> ServePut(const ControlPut& put) {
    const std::string key = StoreKey(put.bucket, put.key, put.part_number, put.upload_id);
    const auto token_text = wire::FindHeader(put.headers, wire::header::kToken);
    puts.push_back({.target = key, .token = token_text.has_value(), .body_bytes = put.body.size()});
    ControlReply reply;
    if (!token_text || mode == Mode::kPlainS3) {
      // A plain PUT: the body is the object (an empty one too: the 0-byte-object hazard).
      reply.http_status = 200;
      reply.etag = Store(key, std::vector<std::byte>(put.body.begin(), put.body.end()));
      return reply;
    }
    if (mode == Mode::kPutNoAnswer) return Status::DeadlineExceeded("PUT: no answer");
    if (mode == Mode::kPutUnmarked) {
      reply.http_status = 200;
      reply.etag = Store(key, {});
      return reply;
    }
    REQUIRE(put.body.empty());
    auto token = wire::DecodeRcToken(*token_text);
    REQUIRE(token.ok());
    const auto session = wire::FindHeader(put.headers, wire::header::kSession);
    REQUIRE(session.has_value());
    REQUIRE(sessions_.count(std::string(*session)) == 1);
    const auto size = wire::FindHeader(put.headers, wire::header::kSize);
    REQUIRE(size.has_value());
    REQUIRE(std::string(*size) == std::to_string(token->length));
    const auto cookie = wire::FindHeader(put.headers, wire::header::kCookie);
    REQUIRE(cookie.has_value());
    auto read = Read(*token, token->length);
    if (!read.ok()) return ControlReply{.http_status = 500};
    const std::string etag = Store(key, std::move(*read));
    reply.http_status = 200;
    reply.etag = etag;
    reply.rdma_headers = {{"x-amz-rdma-reply", "200"},
                          {"x-amz-rdma-bytes-transferred", std::to_string(token->length)},
                          {"x-amz-rdma-cookie", std::string(*cookie)},
                          {"x-amz-rdma-etag", "\"" + etag + "\""}};
    return reply;
  }

  Result<ControlReply> ServeGet(ControlGet get) {
    ControlReply reply;
    reply.etag = "e1";
    reply.object_size = object_.size();
    const auto token_text = wire::FindHeader(get.headers, wire::header::kToken);
    auto body = [&](int status) {
      const uint64_t n =
          get.offset < object_.size() ? std::min(get.length, object_.size() - get.offset) : 0;
      std::memcpy(get.destination.data(), object_.data() + get.offset, n);
      reply.http_status = status;
      reply.body_bytes = n;
      return reply;
    };
    if (!token_text || mode == Mode::kPlainS3) {
      ++plain_gets;
      return body(206);
    }
    ++rdma_gets;
    if (mode == Mode::kGet500) return ControlReply{.http_status = 500};
    if (mode == Mode::kGetNoAnswer) return Status::DeadlineExceeded("GET: no answer");
    if (mode == Mode::kGet501Body) {
      reply.rdma_headers = {{"x-amz-rdma-reply", "501"}};
      return body(200);
    }
    auto token = wire::DecodeRcToken(*token_text);
    REQUIRE(token.ok());
    const auto session = wire::FindHeader(get.headers, wire::header::kSession);
    REQUIRE(session.has_value());
    REQUIRE(sessions_.count(std::string(*session)) == 1);
    auto moved = Write(*token, get.offset, get.length);
    if (!moved.ok()) return ControlReply{.http_status = 500};
    reply.http_status = 206;
    reply.rdma_headers = {{"x-amz-rdma-reply", "206"},
                          {"x-amz-rdma-bytes-transferred", std::to_string(*moved)}};
    return reply;
  }

  FakeProvider& qps_;
  std::vector<std::byte> object_;
  std::string endpoint_ = "http://127.0.0.1:7070";
  std::map<std::string, Prepared> sessions_;
  std::deque<std::function<void()>> deferred_;
};

std::vector<std::byte> Pattern(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  return v;
}

struct Fixture {
  Fixture(size_t object_bytes = 1 << 20, size_t max_sessions = 4)
      : object(Pattern(object_bytes)),
        provider(std::make_shared<FakeProvider>()),
        gateway(std::make_shared<FakeGateway>(*provider, object)),
        channel(RcChannel::Create(gateway, provider, clock, {.max_sessions = max_sessions})) {}

  // The result lands in the returned holder whenever `done` runs (now, or in RunAll).
  std::shared_ptr<std::optional<Result<FetchResult>>> FetchAsync(
      std::shared_ptr<RegisteredRegion> region, uint64_t object_offset, uint64_t length,
      uint64_t window_offset = 0, std::shared_ptr<CancellationToken> cancel = nullptr) {
    auto out = std::make_shared<std::optional<Result<FetchResult>>>();
    FetchRequest request{
        .bucket = "b",
        .key = "dir/obj",
        .object_offset = object_offset,
        .window = {.region = std::move(region), .offset = window_offset, .length = length},
        .cancel = std::move(cancel)};
    channel->Fetch(std::move(request), [out](Result<FetchResult> r) { *out = std::move(r); });
    return out;
  }
  std::optional<Result<FetchResult>> Fetch(std::shared_ptr<RegisteredRegion> region,
                                           uint64_t object_offset, uint64_t length,
                                           uint64_t window_offset = 0) {
    return *FetchAsync(std::move(region), object_offset, length, window_offset);
  }

  // A PUT (part 0) or UploadPart of region[window_offset, +length) as object "b/dir/obj".
  std::shared_ptr<std::optional<Result<PutResult>>> PutAsync(
      std::shared_ptr<RegisteredRegion> region, uint64_t window_offset, uint64_t length,
      int part = 0, std::string upload_id = {},
      std::shared_ptr<CancellationToken> cancel = nullptr) {
    auto out = std::make_shared<std::optional<Result<PutResult>>>();
    PutRequest request{
        .bucket = "b",
        .key = "dir/obj",
        .part_number = part,
        .upload_id = std::move(upload_id),
        .window = {.region = std::move(region), .offset = window_offset, .length = length},
        .content_type = "application/octet-stream",
        .cancel = std::move(cancel)};
    channel->Put(std::move(request), [out](Result<PutResult> r) { *out = std::move(r); });
    return out;
  }
  std::optional<Result<PutResult>> Put(std::shared_ptr<RegisteredRegion> region,
                                       uint64_t window_offset, uint64_t length, int part = 0,
                                       std::string upload_id = {}) {
    return *PutAsync(std::move(region), window_offset, length, part, std::move(upload_id));
  }
  // Whether the gateway stored exactly region[window_offset, +n) under `key`.
  bool Stored(const std::string& key, const RegisteredRegion& region, uint64_t window_offset,
              uint64_t n) const {
    auto it = gateway->stored.find(key);
    return it != gateway->stored.end() && it->second.size() == n &&
           std::memcmp(it->second.data(), region.host_bytes().data() + window_offset, n) == 0;
  }
  // No PUT without a payload ever reached a server that was not known to read it over RDMA.
  bool NoEmptyPlainPut() const {
    return std::none_of(gateway->puts.begin(), gateway->puts.end(),
                        [](const SeenPut& p) { return !p.token && p.body_bytes == 0; });
  }

  bool Matches(const RegisteredRegion& region, uint64_t window_offset, uint64_t object_offset,
               uint64_t n) const {
    return std::memcmp(region.host_bytes().data() + window_offset, object.data() + object_offset,
                       n) == 0;
  }

  testing::FakeClock clock;
  std::vector<std::byte> object;
  std::shared_ptr<FakeProvider> provider;
  std::shared_ptr<FakeGateway> gateway;
  std::shared_ptr<RcChannel> channel;
};

TEST_CASE("first fetch sets up a session (PREPARE, READY), later ones reuse it with a GET") {
  Fixture f;
  auto region = std::make_shared<FakeRegion>(256 << 10);
  auto first = f.Fetch(region, 4096, 128 << 10);
  REQUIRE(first.has_value());
  REQUIRE(first->ok());
  CHECK((*first)->via == DataPath::kRdma);
  CHECK((*first)->bytes == (128u << 10));
  CHECK((*first)->object_size == f.object.size());  // x-amz-rdma-object-size
  CHECK(f.Matches(*region, 0, 4096, 128 << 10));
  CHECK(f.gateway->prepares == 1);
  CHECK(f.gateway->readies == 1);

  auto second = f.Fetch(region, 512 << 10, 256 << 10);
  REQUIRE(second->ok());
  CHECK((*second)->via == DataPath::kRdma);
  CHECK((*second)->object_size == f.object.size());
  CHECK(f.Matches(*region, 0, 512 << 10, 256 << 10));
  CHECK(f.gateway->prepares == 1);  // reused
  CHECK(f.gateway->rdma_gets == 1);
  CHECK(f.channel->live_sessions() == 1);

  const RcChannelCounters c = f.channel->counters();
  CHECK(c.endpoint == "http://127.0.0.1:7070");
  CHECK(c.rdma_requests == 2);
  CHECK(c.rdma_bytes == (384u << 10));
  CHECK(c.http_bytes == 0);
  CHECK(c.sessions_opened == 1);
  CHECK(f.channel->policy().state(c.endpoint, wire::RdmaOp::kGet) == wire::OpState::kConfirmed);
}

TEST_CASE("a range past the end of the object is short, over READY and over a session GET") {
  Fixture f(100'000);
  auto region = std::make_shared<FakeRegion>(64 << 10);
  auto first = f.Fetch(region, 90'000, 64 << 10);
  REQUIRE(first->ok());
  CHECK((*first)->bytes == 10'000);
  CHECK((*first)->object_size == 100'000);
  CHECK(f.Matches(*region, 0, 90'000, 10'000));
  auto second = f.Fetch(region, 50'000, 64 << 10);
  REQUIRE(second->ok());
  CHECK((*second)->bytes == 50'000);
  CHECK((*second)->via == DataPath::kRdma);
  CHECK(f.Matches(*region, 0, 50'000, 50'000));
}

TEST_CASE("several QPs per gateway: concurrent fetches open up to max_sessions, then queue") {
  Fixture f(1 << 20, /*max_sessions=*/2);
  f.gateway->defer = true;
  std::vector<std::shared_ptr<FakeRegion>> regions;
  std::vector<std::optional<Result<FetchResult>>> results(3);
  for (int i = 0; i < 3; ++i) {
    regions.push_back(std::make_shared<FakeRegion>(64 << 10));
    f.channel->Fetch({.bucket = "b",
                      .key = "k",
                      .object_offset = static_cast<uint64_t>(i) * (64 << 10),
                      .window = {.region = regions[i], .length = 64 << 10}},
                     [&results, i](Result<FetchResult> r) { results[i] = std::move(r); });
  }
  CHECK(f.channel->live_sessions() == 2);
  f.gateway->RunAll();
  for (int i = 0; i < 3; ++i) {
    REQUIRE(results[i].has_value());
    REQUIRE(results[i]->ok());
    CHECK((*results[i])->via == DataPath::kRdma);
    CHECK(f.Matches(*regions[i], 0, i * (64 << 10), 64 << 10));
  }
  CHECK(f.gateway->prepares == 2);
  CHECK(f.gateway->rdma_gets == 1);  // the third ran on a released session
  CHECK(f.channel->live_sessions() == 2);
}

TEST_CASE("a plain S3 server: PREPARE refused, HTTP fallback, then HTTP straight away") {
  Fixture f;
  f.gateway->mode = Mode::kPlainS3;
  auto region = std::make_shared<FakeRegion>(64 << 10);
  auto first = f.Fetch(region, 1000, 64 << 10);
  REQUIRE(first->ok());
  CHECK((*first)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 1000, 64 << 10));
  const std::string endpoint = f.channel->counters().endpoint;
  CHECK(f.channel->policy().state(endpoint, wire::RdmaOp::kGet) == wire::OpState::kDeclined);
  auto second = f.Fetch(region, 2000, 64 << 10);
  REQUIRE(second->ok());
  CHECK((*second)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 2000, 64 << 10));
  const RcChannelCounters c = f.channel->counters();
  CHECK(c.http_requests == 2);
  CHECK(c.http_bytes == (128u << 10));
  CHECK(c.fallbacks == 1);
  CHECK(c.rdma_bytes == 0);
  CHECK(f.channel->live_sessions() == 0);  // the refused session's QP is gone
}

TEST_CASE("hipobj-rc unsupported (HTTP 501 to PREPARE) declines the endpoint") {
  Fixture f;
  f.gateway->mode = Mode::kPrepare501;
  auto region = std::make_shared<FakeRegion>(4096);
  auto r = f.Fetch(region, 0, 4096);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 0, 4096));
  CHECK(f.channel->policy().state(f.gateway->endpoint(), wire::RdmaOp::kGet) ==
        wire::OpState::kDeclined);
}

TEST_CASE("READY without an answer: the QP is fenced before the HTTP fallback writes the window") {
  Fixture f;
  f.gateway->mode = Mode::kReadyTimeout;
  auto region = std::make_shared<FakeRegion>(64 << 10);
  auto r = f.Fetch(region, 0, 64 << 10);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 0, 64 << 10));
  REQUIRE(f.provider->book.created == 1);
  CHECK(f.provider->book.fenced.size() == 1);  // the fenced QP is gone with its session
  CHECK(f.gateway->cancels == 1);              // the server's session is released
  const RcChannelCounters c = f.channel->counters();
  CHECK(c.sessions_fenced == 1);
  CHECK(c.fallbacks == 1);
  const uint64_t addr = reinterpret_cast<uint64_t>(region->host_bytes().data());
  CHECK(f.channel->fence().state(addr) == wire::WindowState::kIdle);
}

TEST_CASE("session GET failures fence the session and fall back to HTTP with correct data") {
  for (Mode mode : {Mode::kGet500, Mode::kGetNoAnswer, Mode::kGet501Body}) {
    CAPTURE(static_cast<int>(mode));
    Fixture f;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    REQUIRE(f.Fetch(region, 0, 64 << 10)->ok());  // opens the session over READY
    FakeQp* qp = f.provider->qps.begin()->second;
    const uint32_t qpn = qp->local().qpn;  // the QP itself is gone once its session is fenced
    f.gateway->mode = mode;
    auto r = f.Fetch(region, 100, 64 << 10);
    REQUIRE(r->ok());
    CHECK((*r)->via == DataPath::kHttp);
    CHECK(f.Matches(*region, 0, 100, 64 << 10));
    CHECK(f.provider->book.fenced.count(qpn) == 1);
    CHECK(f.channel->live_sessions() == 0);
    const RcChannelCounters c = f.channel->counters();
    CHECK(c.rdma_bytes == (64u << 10));
    CHECK(c.http_bytes == (64u << 10));
    CHECK(c.fallbacks == 1);
    CHECK(c.sessions_fenced == 1);
  }
}

TEST_CASE("a fenced QP takes no more writes: the next fetch opens a new session") {
  Fixture f;
  auto region = std::make_shared<FakeRegion>(8192);
  REQUIRE(f.Fetch(region, 0, 8192)->ok());
  f.gateway->mode = Mode::kGet500;
  REQUIRE(f.Fetch(region, 0, 8192)->ok());
  f.gateway->mode = Mode::kRc;
  auto r = f.Fetch(region, 8192, 8192);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kRdma);
  CHECK(f.Matches(*region, 0, 8192, 8192));
  CHECK(f.gateway->prepares == 2);
}

TEST_CASE("cancelled while in flight: kCancelled after the fence, no HTTP retry") {
  Fixture f;
  auto region = std::make_shared<FakeRegion>(8192);
  REQUIRE(f.Fetch(region, 0, 8192)->ok());
  FakeQp* qp = f.provider->qps.begin()->second;
  const uint32_t qpn = qp->local().qpn;  // the QP itself is gone once its session is fenced
  f.gateway->defer = true;
  f.gateway->mode = Mode::kGetNoAnswer;  // stands in for the transport's answer to a cancel
  auto cancel = std::make_shared<CancellationToken>();
  auto r = f.FetchAsync(region, 0, 8192, 0, cancel);
  CHECK_FALSE(r->has_value());
  cancel->Cancel();
  f.gateway->RunAll();
  REQUIRE(r->has_value());
  CHECK((*r)->status().code() == StatusCode::kCancelled);
  CHECK(f.provider->book.fenced.count(qpn) == 1);
  CHECK(f.gateway->plain_gets == 0);
  // The window is usable again at once (fenced before `done`).
  f.gateway->defer = false;
  f.gateway->mode = Mode::kRc;
  auto again = f.Fetch(region, 0, 8192);
  REQUIRE(again->ok());
  CHECK(f.Matches(*region, 0, 0, 8192));
}

TEST_CASE("a window in flight is refused, not shared") {
  Fixture f;
  f.gateway->defer = true;
  auto region = std::make_shared<FakeRegion>(8192);
  auto first = f.FetchAsync(region, 0, 4096);
  CHECK_FALSE(first->has_value());
  auto second = f.Fetch(region, 0, 4096);
  REQUIRE(second.has_value());
  CHECK(second->status().code() == StatusCode::kFailedPrecondition);
  CHECK(second->status().reason() == StatusReason::kWindowBusy);
  auto other_window = f.FetchAsync(region, 0, 4096, /*window_offset=*/4096);
  CHECK_FALSE(other_window->has_value());
  f.gateway->RunAll();
  REQUIRE(first->has_value());
  CHECK((*first)->ok());
  REQUIRE(other_window->has_value());
  CHECK((*other_window)->ok());
  CHECK(f.Matches(*region, 4096, 0, 4096));
}

TEST_CASE("no QP can be created: HTTP, and the endpoint is not blamed") {
  Fixture f;
  f.provider->fail_create = true;
  auto region = std::make_shared<FakeRegion>(4096);
  auto r = f.Fetch(region, 0, 4096);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 0, 4096));
  CHECK(f.channel->policy().state(f.gateway->endpoint(), wire::RdmaOp::kGet) ==
        wire::OpState::kUnknown);
  CHECK(f.channel->live_sessions() == 0);
}

TEST_CASE("a QP found in error before a request: fenced and dropped, the request goes over HTTP") {
  Fixture f;
  auto region = std::make_shared<FakeRegion>(4096);
  REQUIRE(f.Fetch(region, 0, 4096)->ok());
  FakeQp* qp = f.provider->qps.begin()->second;
  const uint32_t qpn = qp->local().qpn;  // the QP itself is gone once its session is fenced
  qp->fail_reap = true;
  auto r = f.Fetch(region, 4096, 4096);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Matches(*region, 0, 4096, 4096));
  CHECK(f.provider->book.fenced.count(qpn) == 1);
  CHECK(f.channel->live_sessions() == 0);
  CHECK(f.gateway->rdma_gets == 0);
}

// A source region filled with bytes unlike the object's, so a PUT cannot pass by echoing them.
std::shared_ptr<FakeRegion> Source(size_t n, int seed) {
  auto region = std::make_shared<FakeRegion>(n);
  std::span<std::byte> bytes = region->host_bytes();
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 7 + seed * 13 + 1) % 253);
  return region;
}

TEST_CASE("GET READY: the object size comes from x-amz-rdma-object-size") {
  Fixture f(100'000);
  auto region = std::make_shared<FakeRegion>(8192);
  auto r = f.Fetch(region, 0, 8192);
  REQUIRE(r->ok());
  CHECK((*r)->object_size == 100'000);
  // A server without the extension: unknown (0) for a full window, as before.
  Fixture g(100'000);
  g.gateway->send_object_size = false;
  auto s = g.Fetch(region, 0, 8192);
  REQUIRE(s->ok());
  CHECK((*s)->object_size == 0);
}

TEST_CASE("PUT on a fresh endpoint: PREPARE (op PUT) + READY, the server reads the window") {
  Fixture f;
  auto region = Source(256 << 10, 1);
  auto r = f.Put(region, 4096, 100'000);
  REQUIRE(r.has_value());
  REQUIRE_MESSAGE(r->ok(), r->status().ToString());
  CHECK((*r)->via == DataPath::kRdma);
  CHECK((*r)->bytes == 100'000);
  CHECK((*r)->etag == "etag-0-100000");
  CHECK(f.Stored("/b/dir/obj", *region, 4096, 100'000));
  REQUIRE(f.gateway->prepared_requests.size() == 1);
  const wire::RcPrepareRequest& prepare = f.gateway->prepared_requests[0];
  CHECK(prepare.op == wire::RcOp::kPut);
  CHECK(prepare.target == "/b/dir/obj");
  CHECK(prepare.size == 100'000);
  CHECK(prepare.offset == 0);
  CHECK(prepare.token.length == 100'000);
  CHECK(prepare.token.addr == reinterpret_cast<uint64_t>(region->host_bytes().data()) + 4096);
  CHECK(f.gateway->readies == 1);
  CHECK(f.gateway->puts.empty());  // no S3 PUT at all: READY ran the transfer
  const RcChannelCounters c = f.channel->counters();
  CHECK(c.rdma_put_requests == 1);
  CHECK(c.rdma_put_bytes == 100'000);
  CHECK(c.http_put_requests == 0);
  CHECK(c.rdma_bytes == 0);
  CHECK(c.sessions_opened == 1);
  CHECK(f.channel->live_sessions() == 1);  // kept for reuse
  CHECK(f.channel->policy().state(c.endpoint, wire::RdmaOp::kPut) == wire::OpState::kConfirmed);
  CHECK_FALSE(f.channel->session_extension_confirmed());
}

TEST_CASE("session PUTs only once a session GET has confirmed the extension") {
  Fixture f;
  auto region = Source(64 << 10, 2);
  // Two PUTs before any session request: each sets up its own session (the idle one is closed).
  REQUIRE(f.Put(region, 0, 1000)->ok());
  REQUIRE(f.Put(region, 1000, 2000)->ok());
  CHECK(f.gateway->prepares == 2);
  CHECK(f.gateway->cancels == 1);
  CHECK(f.gateway->puts.empty());
  CHECK(f.channel->live_sessions() == 1);
  CHECK(f.Stored("/b/dir/obj", *region, 1000, 2000));
  // A session GET on the idle session confirms the extension.
  auto window = std::make_shared<FakeRegion>(8192);
  auto got = f.Fetch(window, 0, 8192);
  REQUIRE(got->ok());
  CHECK((*got)->via == DataPath::kRdma);
  CHECK(f.gateway->rdma_gets == 1);
  CHECK(f.channel->session_extension_confirmed());
  // Now a PUT is one empty-bodied request on the session: token, session, size.
  auto r = f.Put(region, 3000, 40'000);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kRdma);
  CHECK(f.gateway->prepares == 2);
  REQUIRE(f.gateway->puts.size() == 1);
  CHECK(f.gateway->puts[0].token);
  CHECK(f.gateway->puts[0].body_bytes == 0);
  CHECK(f.Stored("/b/dir/obj", *region, 3000, 40'000));
  // ... and it confirms again: a second session PUT.
  REQUIRE(f.Put(region, 0, 64 << 10)->ok());
  CHECK(f.gateway->puts.size() == 2);
  CHECK(f.Stored("/b/dir/obj", *region, 0, 64 << 10));
  const RcChannelCounters c = f.channel->counters();
  CHECK(c.rdma_put_requests == 4);
  CHECK(c.rdma_put_bytes == 1000 + 2000 + 40'000 + (64u << 10));
  CHECK(c.rdma_requests == 1);
  CHECK(c.rdma_bytes == 8192);
  CHECK(c.http_put_requests == 0);
  CHECK(c.sessions_fenced == 0);
}

TEST_CASE("multipart: UploadParts carry the part's target, over PREPARE then on the session") {
  Fixture f;
  auto region = Source(3 * 10'000, 3);
  REQUIRE(f.Put(region, 0, 10'000, 1, "up1")->ok());
  CHECK(f.gateway->prepared_requests.back().target == "/b/dir/obj?partNumber=1&uploadId=up1");
  CHECK(f.channel->policy().state(f.gateway->endpoint(), wire::RdmaOp::kUploadPart) ==
        wire::OpState::kConfirmed);
  auto window = std::make_shared<FakeRegion>(4096);
  REQUIRE(f.Fetch(window, 0, 4096)->ok());  // confirms the extension
  auto two = f.Put(region, 10'000, 10'000, 2, "up1");
  auto three = f.Put(region, 20'000, 10'000, 3, "up1");
  REQUIRE(two->ok());
  REQUIRE(three->ok());
  CHECK((*three)->via == DataPath::kRdma);
  CHECK_FALSE((*three)->etag.empty());
  for (int part = 1; part <= 3; ++part) {
    CAPTURE(part);
    CHECK(f.Stored(StoreKey("b", "dir/obj", part, "up1"), *region, (part - 1) * 10'000, 10'000));
  }
  REQUIRE(f.gateway->puts.size() == 2);
  CHECK(f.gateway->puts[1].target == "/b/dir/obj?partNumber=3&uploadId=up1");
  CHECK(f.channel->counters().rdma_put_bytes == 30'000);
}

TEST_CASE("PREPARE declined: the PUT goes over HTTP with the window's bytes, never empty") {
  for (Mode mode : {Mode::kPlainS3, Mode::kPrepare501}) {
    CAPTURE(static_cast<int>(mode));
    Fixture f;
    f.gateway->mode = mode;
    auto region = Source(64 << 10, 4);
    auto r = f.Put(region, 100, 50'000);
    REQUIRE(r->ok());
    CHECK((*r)->via == DataPath::kHttp);
    CHECK((*r)->bytes == 50'000);
    CHECK(f.Stored("/b/dir/obj", *region, 100, 50'000));
    const std::string endpoint = f.gateway->endpoint();
    CHECK(f.channel->policy().state(endpoint, wire::RdmaOp::kPut) == wire::OpState::kDeclined);
    // Per operation: UploadPart has its own PREPARE; GET is untouched by a PUT decline.
    CHECK(f.channel->policy().state(endpoint, wire::RdmaOp::kGet) == wire::OpState::kUnknown);
    // The next PUT goes over HTTP straight away.
    const int posts = f.gateway->refused_posts;
    auto again = f.Put(region, 0, 1000);
    REQUIRE(again->ok());
    CHECK((*again)->via == DataPath::kHttp);
    CHECK(f.gateway->refused_posts == posts);
    CHECK(f.Stored("/b/dir/obj", *region, 0, 1000));
    // A part goes through its own PREPARE, is refused too, and is uploaded with its body.
    auto part = f.Put(region, 0, 2000, 7, "u9");
    REQUIRE(part->ok());
    CHECK((*part)->via == DataPath::kHttp);
    CHECK(f.gateway->refused_posts == posts + 1);
    CHECK(f.Stored(StoreKey("b", "dir/obj", 7, "u9"), *region, 0, 2000));
    CHECK(f.NoEmptyPlainPut());
    for (const SeenPut& p : f.gateway->puts) CHECK_FALSE(p.token);
    const RcChannelCounters c = f.channel->counters();
    CHECK(c.http_put_requests == 3);
    CHECK(c.http_put_bytes == 50'000 + 1000 + 2000);
    CHECK(c.rdma_put_requests == 0);
    CHECK(c.fallbacks == 2);
    CHECK(f.channel->live_sessions() == 0);
  }
}

TEST_CASE("a PUT whose READY gets no answer: the QP is fenced, then the HTTP PUT") {
  Fixture f;
  f.gateway->mode = Mode::kReadyTimeout;
  auto region = Source(8192, 5);
  auto r = f.Put(region, 0, 8192);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Stored("/b/dir/obj", *region, 0, 8192));
  CHECK(f.provider->book.fenced.size() == 1);
  CHECK(f.gateway->cancels == 1);
  CHECK(f.NoEmptyPlainPut());
  const RcChannelCounters c = f.channel->counters();
  CHECK(c.sessions_fenced == 1);
  CHECK(c.fallbacks == 1);
  CHECK(c.http_put_bytes == 8192);
  const uint64_t addr = reinterpret_cast<uint64_t>(region->host_bytes().data());
  CHECK(f.channel->fence().state(addr) == wire::WindowState::kIdle);
}

TEST_CASE("a session PUT without an answer: fenced before the HTTP retry") {
  Fixture f;
  auto region = Source(8192, 6);
  auto window = std::make_shared<FakeRegion>(4096);
  REQUIRE(f.Fetch(window, 0, 4096)->ok());  // session opened over READY
  REQUIRE(f.Fetch(window, 0, 4096)->ok());  // session GET: extension confirmed
  const uint32_t qpn = f.provider->qps.begin()->second->local().qpn;
  f.gateway->mode = Mode::kPutNoAnswer;
  auto r = f.Put(region, 0, 8192);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Stored("/b/dir/obj", *region, 0, 8192));
  CHECK(f.provider->book.fenced.count(qpn) == 1);
  CHECK(f.channel->live_sessions() == 0);
  REQUIRE(f.gateway->puts.size() == 2);
  CHECK(f.gateway->puts[0].token);
  CHECK_FALSE(f.gateway->puts[1].token);
  CHECK(f.gateway->puts[1].body_bytes == 8192);
}

TEST_CASE(
    "a session PUT answered without x-amz-rdma-reply: overwritten over HTTP, no more RDMA writes") {
  Fixture f;
  auto region = Source(8192, 7);
  auto window = std::make_shared<FakeRegion>(4096);
  REQUIRE(f.Fetch(window, 0, 4096)->ok());
  REQUIRE(f.Fetch(window, 0, 4096)->ok());
  f.gateway->mode = Mode::kPutUnmarked;  // as if the server forgot the extension: 0 bytes stored
  auto r = f.Put(region, 0, 8192);
  REQUIRE(r->ok());
  CHECK((*r)->via == DataPath::kHttp);
  CHECK(f.Stored("/b/dir/obj", *region, 0, 8192));  // the HTTP retry replaced the empty object
  CHECK_FALSE(f.channel->policy().WritesAllowed(f.gateway->endpoint()));
  // RDMA PUT is declined for the endpoint: the next PUT carries its body.
  f.gateway->mode = Mode::kRc;
  const int prepares = f.gateway->prepares;
  auto next = f.Put(region, 0, 4096);
  REQUIRE(next->ok());
  CHECK((*next)->via == DataPath::kHttp);
  REQUIRE(f.gateway->puts.size() == 3);
  CHECK_FALSE(f.gateway->puts[2].token);
  CHECK(f.gateway->puts[2].body_bytes == 4096);
  // The re-probe goes through PREPARE, never an empty-bodied session PUT.
  f.clock.Advance(std::chrono::minutes(2));
  auto probe = f.Put(region, 0, 2048);
  REQUIRE(probe->ok());
  CHECK((*probe)->via == DataPath::kRdma);
  CHECK(f.gateway->prepares == prepares + 1);
  CHECK(f.gateway->puts.size() == 3);
  CHECK(f.Stored("/b/dir/obj", *region, 0, 2048));
  // The extension must be confirmed afresh: still PREPARE.
  CHECK_FALSE(f.channel->session_extension_confirmed());
  REQUIRE(f.Put(region, 0, 1024)->ok());
  CHECK(f.gateway->prepares == prepares + 2);
  CHECK(f.gateway->puts.size() == 3);
  CHECK(f.NoEmptyPlainPut());
}

TEST_CASE("a PUT cancelled in flight: kCancelled after the fence, no HTTP PUT") {
  Fixture f;
  auto region = Source(8192, 8);
  auto window = std::make_shared<FakeRegion>(4096);
  REQUIRE(f.Fetch(window, 0, 4096)->ok());
  REQUIRE(f.Fetch(window, 0, 4096)->ok());
  const uint32_t qpn = f.provider->qps.begin()->second->local().qpn;
  f.gateway->defer = true;
  f.gateway->mode = Mode::kPutNoAnswer;  // stands in for the transport's answer to a cancel
  auto cancel = std::make_shared<CancellationToken>();
  auto r = f.PutAsync(region, 0, 8192, 0, {}, cancel);
  CHECK_FALSE(r->has_value());
  cancel->Cancel();
  f.gateway->RunAll();
  REQUIRE(r->has_value());
  CHECK((*r)->status().code() == StatusCode::kCancelled);
  CHECK(f.provider->book.fenced.count(qpn) == 1);
  CHECK(f.gateway->puts.size() == 1);
  CHECK(f.channel->counters().failed == 1);
}

TEST_CASE("invalid PUTs") {
  Fixture f;
  auto region = Source(4096, 9);
  CHECK(f.Put(nullptr, 0, 4096)->status().code() == StatusCode::kInvalidArgument);
  CHECK(f.Put(region, 0, 0)->status().code() == StatusCode::kInvalidArgument);
  CHECK(f.Put(region, 0, 4096, 1, "")->status().code() == StatusCode::kInvalidArgument);
  CHECK(f.Put(region, 0, 4096, 0, "u")->status().code() == StatusCode::kInvalidArgument);
  CHECK(f.Put(region, 0, 4096, 10'001, "u")->status().code() == StatusCode::kInvalidArgument);
  CHECK(f.gateway->puts.empty());
  CHECK(f.gateway->prepares == 0);
}

TEST_CASE("invalid windows") {
  Fixture f;
  auto r = f.Fetch(nullptr, 0, 4096);
  CHECK(r->status().code() == StatusCode::kInvalidArgument);
  auto region = std::make_shared<FakeRegion>(4096);
  CHECK(f.Fetch(region, 0, 0)->status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reelfs::rdmaio::channel

// DcChannel's logic against fakes: DC targets that are numbers in a book (a DCT is "live" until
// fenced or destroyed), and a control plane that plays a cuObject DC server (or one that
// declines, rejects, fails, ignores the token or never answers): it parses the 81-character token
// and "RDMA-writes" the object bytes at the token's address, only through a live DCTN, as a DC
// initiator would. No device needed; the real DCT is exercised on ConnectX hardware
// (docs/protocols/rdma-dc.md).
#include "rdmaio/channel/dc_channel.h"

#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include <doctest/doctest.h>

#include "rdmaio/wire/dc_token.h"
#include "rdmaio/wire/rdma_headers.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/host_region.h"

namespace reelfs::rdmaio::channel {
namespace {

using FakeRegion = testing::FakeHostRegion;

// What the fake targets did; targets are owned by the channel, so tests ask the book.
struct TargetBook {
  std::set<uint32_t> live;  // DCTNs a server can write through now
  std::set<uint32_t> ever;
  uint32_t next_dctn = 0x1000;
  int created = 0;
  int fences = 0;
  bool fail_fence = false;
  uint32_t Allocate() {
    const uint32_t n = next_dctn++;
    live.insert(n);
    ever.insert(n);
    return n;
  }
};

class FakeTarget final : public DcTarget {
 public:
  explicit FakeTarget(TargetBook& book) : book_(book) {
    address_.dctn = book_.Allocate();
    address_.lid = 7;
    address_.gid_present = true;
    for (size_t i = 0; i < address_.gid.size(); ++i) address_.gid[i] = static_cast<uint8_t>(i + 1);
    ++book_.created;
  }
  ~FakeTarget() override { book_.live.erase(address_.dctn); }
  const DcAddress& address() const override { return address_; }
  Status Fence() override {
    ++book_.fences;
    const uint32_t fresh = book_.Allocate();  // created before the old one goes, as the real one
    book_.live.erase(address_.dctn);
    if (book_.fail_fence) {
      book_.live.erase(fresh);
      return Status::Unavailable("fake: cannot recreate the DCT");
    }
    address_.dctn = fresh;
    return Status::Ok();
  }

 private:
  TargetBook& book_;
  DcAddress address_;
};

class FakeProvider final : public DcTargetProvider {
 public:
  Result<std::unique_ptr<DcTarget>> CreateTarget() override {
    if (fail_create) return Status::ResourceExhausted("fake: no QPs left");
    return std::unique_ptr<DcTarget>(std::make_unique<FakeTarget>(book));
  }
  Result<WindowAddress> Locate(const RegisteredWindow& window) const override {
    return testing::LocateFakeWindow(window);
  }
  MemoryRegistrar& registrar() override { throw std::logic_error("unused"); }

  TargetBook book;
  bool fail_create = false;
};

enum class Mode {
  kDc,                   // writes through the token's DCTN; reply 200 + bytes-transferred
  kDecline501Body,       // draft spec: HTTP 200, reply 501, the object in the body
  kDecline501,           // AIStor: reply 501 with an S3 error, no object
  kIgnored,              // Ceph with RDMA off: no reply header, the object in the body
  kHttp400,              // token rejected
  kHttp500,              // vgwrdma: any RDMA problem
  kHttp501,              // NooBaa S3RdmaNotSupported
  kHttp503,              // Ceph: buffers busy
  kArchived,             // 403 InvalidObjectState (to every GET)
  kNoAnswer,             // data GETs with a token: no answer (timeout)
  kPartialThenNoAnswer,  // writes part of the window, then no answer
};

class FakeDcServer final : public ControlPlane {
 public:
  FakeDcServer(TargetBook& book, std::vector<std::byte> object) : book_(book), object_(object) {}

  const std::string& endpoint() const override { return endpoint_; }

  void Get(ControlGet request, ControlCallback done) override {
    auto call = [this, request = std::move(request), done = std::move(done)]() mutable {
      done(Serve(std::move(request)));
    };
    if (defer) {
      deferred_.push_back(std::move(call));
    } else {
      call();
    }
  }
  void Put(ControlPut, ControlCallback done) override {
    ++puts;  // DcChannel only reads
    done(Status::Unimplemented("fake DC server: no PUT"));
  }
  void Post(ControlPost, ControlCallback done) override {
    ++posts;
    done(ControlReply{.http_status = 400, .s3_error_code = "InvalidBucketName"});
  }

  void RunAll() {
    while (!deferred_.empty()) {
      auto next = std::move(deferred_.front());
      deferred_.pop_front();
      next();
    }
  }
  size_t pending() const { return deferred_.size(); }

  // A DC initiator's write for `token`, at any time (a late one included): lands only while the
  // token's DCTN is live.
  bool Write(const wire::DcToken& token, uint64_t offset, uint64_t size, std::byte fill) {
    if (book_.live.count(token.dctn) == 0) return false;
    std::memset(reinterpret_cast<void*>(token.addr), static_cast<int>(fill), size);
    (void)offset;
    return true;
  }

  Mode mode = Mode::kDc;
  bool defer = false;
  int rdma_gets = 0, plain_gets = 0, posts = 0, puts = 0;
  std::vector<wire::DcToken> tokens;  // every token received, decoded
  std::vector<std::string> raw_tokens;
  std::vector<std::string> content_sha;

 private:
  Result<ControlReply> Serve(ControlGet get) {
    ControlReply reply;
    reply.etag = "e1";
    reply.object_size = object_.size();
    const uint64_t n =
        get.offset < object_.size() ? std::min(get.length, object_.size() - get.offset) : 0;
    auto body = [&](int status) {
      std::memcpy(get.destination.data(), object_.data() + get.offset, n);
      reply.http_status = status;
      reply.body_bytes = n;
      return reply;
    };
    if (mode == Mode::kArchived) {
      return ControlReply{.http_status = 403, .s3_error_code = "InvalidObjectState"};
    }
    const auto token_text = wire::FindHeader(get.headers, wire::header::kToken);
    if (!token_text) {
      if (get.cancel && get.cancel->cancelled()) return Status::Cancelled("fake: cancelled");
      ++plain_gets;
      return body(206);
    }
    ++rdma_gets;
    raw_tokens.emplace_back(*token_text);
    const auto sha = wire::FindHeader(get.headers, wire::header::kContentSha256);
    content_sha.emplace_back(sha ? std::string(*sha) : "");
    auto token = wire::DecodeDcToken(*token_text);
    REQUIRE(token.ok());
    tokens.push_back(*token);
    if (get.cancel && get.cancel->cancelled()) return Status::Cancelled("fake: cancelled");
    switch (mode) {
      case Mode::kDc: {
        if (book_.live.count(token->dctn) == 0) return ControlReply{.http_status = 500};
        REQUIRE(token->size == get.length);
        std::memcpy(reinterpret_cast<void*>(token->addr), object_.data() + get.offset, n);
        reply.http_status = 206;
        reply.rdma_headers = {{"x-amz-rdma-reply", "206"},
                              {"x-amz-rdma-bytes-transferred", std::to_string(n)}};
        return reply;
      }
      case Mode::kDecline501Body:
        reply.rdma_headers = {{"x-amz-rdma-reply", "501"}};
        return body(200);
      case Mode::kDecline501:
        return ControlReply{.http_status = 501,
                            .rdma_headers = {{"x-amz-rdma-reply", "501"}},
                            .s3_error_code = "RDMANotSupported"};
      case Mode::kIgnored:
        return body(206);
      case Mode::kHttp400:
        return ControlReply{.http_status = 400, .s3_error_code = "InvalidRDMAToken"};
      case Mode::kHttp500:
        return ControlReply{.http_status = 500, .s3_error_code = "InternalError"};
      case Mode::kHttp501:
        return ControlReply{.http_status = 501, .s3_error_code = "S3RdmaNotSupported"};
      case Mode::kHttp503:
        return ControlReply{.http_status = 503, .s3_error_code = "ServiceUnavailable"};
      case Mode::kNoAnswer:
        return Status::DeadlineExceeded("fake: no answer");
      case Mode::kPartialThenNoAnswer:
        std::memcpy(reinterpret_cast<void*>(token->addr), object_.data() + get.offset, n / 2);
        return Status::DeadlineExceeded("fake: no answer");
      case Mode::kArchived:
        break;
    }
    return Status::Internal("unreachable");
  }

  TargetBook& book_;
  std::vector<std::byte> object_;
  std::string endpoint_ = "http://127.0.0.1:7070";
  std::deque<std::function<void()>> deferred_;
};

std::vector<std::byte> Pattern(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  return v;
}

struct Fixture {
  explicit Fixture(size_t object_bytes = 1 << 20, size_t max_targets = 4)
      : object(Pattern(object_bytes)),
        provider(std::make_shared<FakeProvider>()),
        server(std::make_shared<FakeDcServer>(provider->book, object)),
        channel(DcChannel::Create(server, provider, clock, {.max_targets = max_targets})) {}

  std::shared_ptr<std::optional<Result<FetchResult>>> FetchAsync(
      std::shared_ptr<RegisteredRegion> region, uint64_t object_offset, uint64_t length,
      uint64_t window_offset = 0, std::shared_ptr<CancellationToken> cancel = nullptr,
      std::function<void()> on_done = nullptr) {
    auto out = std::make_shared<std::optional<Result<FetchResult>>>();
    FetchRequest request{
        .bucket = "b",
        .key = "dir/obj",
        .object_offset = object_offset,
        .window = {.region = std::move(region), .offset = window_offset, .length = length},
        .cancel = std::move(cancel)};
    channel->Fetch(std::move(request), [out, on_done](Result<FetchResult> r) {
      if (on_done) on_done();
      *out = std::move(r);
    });
    return out;
  }
  std::optional<Result<FetchResult>> Fetch(std::shared_ptr<RegisteredRegion> region,
                                           uint64_t object_offset, uint64_t length,
                                           uint64_t window_offset = 0) {
    return *FetchAsync(std::move(region), object_offset, length, window_offset);
  }
  bool Matches(const RegisteredRegion& region, uint64_t window_offset, uint64_t object_offset,
               uint64_t n) const {
    return std::memcmp(region.host_bytes().data() + window_offset, object.data() + object_offset,
                       n) == 0;
  }
  uint64_t Addr(const RegisteredRegion& region, uint64_t offset) const {
    return reinterpret_cast<uint64_t>(region.host_bytes().data()) + offset;
  }

  testing::FakeClock clock;
  std::vector<std::byte> object;
  std::shared_ptr<FakeProvider> provider;
  std::shared_ptr<FakeDcServer> server;
  std::shared_ptr<DcChannel> channel;
};

TEST_SUITE("rdmaio") {
  TEST_CASE("DC fetch: the server writes the window through the token; bytes and token checked") {
    Fixture f;
    auto region = std::make_shared<FakeRegion>(512 << 10);
    auto got = f.Fetch(region, 4096, 128 << 10, 64 << 10);
    REQUIRE(got.has_value());
    REQUIRE(got->ok());
    CHECK((*got)->via == DataPath::kRdma);
    CHECK((*got)->bytes == (128u << 10));
    CHECK((*got)->etag == "e1");
    CHECK(f.Matches(*region, 64 << 10, 4096, 128 << 10));
    REQUIRE(f.server->tokens.size() == 1);
    const wire::DcToken t = f.server->tokens[0];  // a copy: later fetches grow the vector
    CHECK(f.server->raw_tokens[0].size() == wire::kDcTokenLength);
    CHECK(f.server->content_sha[0] == "UNSIGNED-PAYLOAD");
    CHECK(t.addr == f.Addr(*region, 64 << 10));  // this request's destination, not the region's
    CHECK(t.size == (128u << 10));
    CHECK(t.rkey == 0xabcdu);
    CHECK(t.lid == 7);
    CHECK(f.provider->book.live.count(t.dctn) == 1);
    CHECK(t.gid_present);
    CHECK(t.gid[0] == 1);
    CHECK(t.gid[15] == 16);
    CHECK(f.server->posts == 0);  // DC has no handshake

    // The second fetch reuses the idle target (same DCTN), a short range at the end of the object.
    auto tail = f.Fetch(region, (1 << 20) - 1000, 8192);
    REQUIRE(tail->ok());
    CHECK((*tail)->bytes == 1000);
    CHECK(f.Matches(*region, 0, (1 << 20) - 1000, 1000));
    CHECK(f.server->tokens[1].dctn == t.dctn);
    CHECK(f.provider->book.created == 1);

    const ChannelCounters c = f.channel->counters();
    CHECK(c.transport == "rdma-dc");
    CHECK(c.endpoint == "http://127.0.0.1:7070");
    CHECK(c.rdma_requests == 2);
    CHECK(c.rdma_bytes == (128u << 10) + 1000);
    CHECK(c.http_requests == 0);
    CHECK(c.sessions_opened == 1);
    CHECK(c.sessions_fenced == 0);
    CHECK(c.failed == 0);
  }

  TEST_CASE("DC: every classifier row ends with the right bytes, path, fence and policy") {
    struct Row {
      Mode mode;
      bool ok;
      DataPath via;
      bool fenced;        // the target was recreated before done
      bool endpoint_off;  // later fetches skip RDMA
    };
    const std::vector<std::pair<const char*, Row>> rows = {
        {"decline 501 + body", {Mode::kDecline501Body, true, DataPath::kHttp, true, true}},
        {"decline 501, no body", {Mode::kDecline501, true, DataPath::kHttp, true, true}},
        {"no reply header: body used", {Mode::kIgnored, true, DataPath::kHttp, false, true}},
        {"HTTP 400 token rejected", {Mode::kHttp400, true, DataPath::kHttp, false, true}},
        {"HTTP 500", {Mode::kHttp500, true, DataPath::kHttp, true, false}},
        {"HTTP 501", {Mode::kHttp501, true, DataPath::kHttp, false, true}},
        {"HTTP 503 busy", {Mode::kHttp503, true, DataPath::kHttp, false, false}},
        {"timeout", {Mode::kNoAnswer, true, DataPath::kHttp, true, false}},
    };
    for (const auto& [name, row] : rows) {
      const auto& name_ = name;  // clang 14 cannot capture a structured binding
      CAPTURE(name_);
      Fixture f;
      f.server->mode = row.mode;
      auto region = std::make_shared<FakeRegion>(256 << 10);
      std::set<uint32_t> live_at_done;
      auto got = f.FetchAsync(region, 8192, 200 << 10, 0, nullptr,
                              [&] { live_at_done = f.provider->book.live; });
      REQUIRE(got->has_value());
      REQUIRE((*got)->ok() == row.ok);
      CHECK((**got)->via == row.via);
      CHECK((**got)->bytes == (200u << 10));
      CHECK(f.Matches(*region, 0, 8192, 200 << 10));
      REQUIRE(f.server->tokens.size() == 1);
      const uint32_t first_dctn = f.server->tokens[0].dctn;
      // Fenced: by the time done ran, the DCTN the token named was dead.
      CHECK((live_at_done.count(first_dctn) == 0) == row.fenced);
      CHECK((f.channel->counters().sessions_fenced == 1) == row.fenced);
      CHECK(f.channel->counters().fallbacks == 1);
      CHECK(f.channel->counters().http_bytes == (200u << 10));
      CHECK(f.channel->fence().state(f.Addr(*region, 0)) == wire::WindowState::kIdle);
      // A late write for the old token only lands if no fence was needed.
      if (row.fenced) CHECK_FALSE(f.server->Write(f.server->tokens[0], 0, 16, std::byte{0xee}));

      f.server->mode = Mode::kDc;
      auto next = f.Fetch(region, 0, 4096);
      REQUIRE(next->ok());
      CHECK(f.Matches(*region, 0, 0, 4096));
      CHECK(((*next)->via == DataPath::kHttp) == row.endpoint_off);
      if (!row.endpoint_off) {
        CHECK(f.server->tokens.size() == 2);
        CHECK((f.server->tokens[1].dctn != first_dctn) == row.fenced);
      }
    }
  }

  TEST_CASE("DC: 403 InvalidObjectState is passed through as kFailedPrecondition") {
    Fixture f;
    f.server->mode = Mode::kArchived;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    auto got = f.Fetch(region, 0, 4096);
    REQUIRE(got.has_value());
    REQUIRE_FALSE(got->ok());
    CHECK(got->status().code() == StatusCode::kFailedPrecondition);
    CHECK(got->status().reason() == StatusReason::kArchived);  // the tape path's cue
    CHECK(f.server->plain_gets == 0);  // not retried over HTTP: it is about the object
    CHECK(f.channel->counters().failed == 1);
    CHECK(f.channel->counters().sessions_fenced == 0);
    CHECK(f.channel->policy().state(f.server->endpoint(), wire::RdmaOp::kGet) !=
          wire::OpState::kDeclined);
  }

  TEST_CASE("DC: a timeout after a partial write fences the target; the late write cannot land") {
    Fixture f;
    f.server->mode = Mode::kPartialThenNoAnswer;
    auto region = std::make_shared<FakeRegion>(128 << 10);
    bool old_live_at_done = true;
    uint32_t old = 0;
    auto got = f.FetchAsync(region, 0, 64 << 10, 0, nullptr, [&] {
      old = f.server->tokens.at(0).dctn;
      old_live_at_done = f.provider->book.live.count(old) == 1;
    });
    REQUIRE(got->has_value());
    REQUIRE((*got)->ok());
    CHECK_FALSE(old_live_at_done);
    CHECK(f.Matches(*region, 0, 0, 64 << 10));  // the HTTP retry overwrote the partial bytes
    CHECK_FALSE(f.server->Write(f.server->tokens[0], 0, 64 << 10, std::byte{0xee}));
    CHECK(f.Matches(*region, 0, 0, 64 << 10));
    CHECK(f.provider->book.live.size() == 1);  // the recreated target
    CHECK(*f.provider->book.live.begin() != old);
  }

  TEST_CASE("DC: a cancelled fetch is fenced before done and reports kCancelled") {
    Fixture f;
    f.server->defer = true;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    auto cancel = CancellationToken::Create();
    bool old_live_at_done = true;
    auto got = f.FetchAsync(region, 0, 4096, 0, cancel, [&] {
      old_live_at_done = f.provider->book.live.count(f.server->tokens.at(0).dctn) == 1;
    });
    CHECK_FALSE(got->has_value());
    cancel->Cancel();
    f.server->RunAll();
    REQUIRE(got->has_value());
    REQUIRE_FALSE((*got)->ok());
    CHECK((*got)->status().code() == StatusCode::kCancelled);
    CHECK_FALSE(old_live_at_done);
    CHECK(f.server->plain_gets == 0);
    CHECK(f.channel->counters().sessions_fenced == 1);
    CHECK(f.channel->fence().state(f.Addr(*region, 0)) == wire::WindowState::kIdle);
  }

  TEST_CASE("DC: a window is not reused while in flight, nor after a failed fence") {
    Fixture f;
    f.server->defer = true;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    auto first = f.FetchAsync(region, 0, 4096);
    auto again = f.Fetch(region, 0, 4096);  // same window, still in flight
    REQUIRE(again.has_value());
    REQUIRE_FALSE(again->ok());
    CHECK(again->status().code() == StatusCode::kFailedPrecondition);
    CHECK(again->status().reason() == StatusReason::kWindowBusy);
    f.server->RunAll();
    REQUIRE((*first)->ok());

    // The fence itself fails: the window stays quarantined and the target is dropped.
    f.server->defer = false;
    f.server->mode = Mode::kHttp500;
    f.provider->book.fail_fence = true;
    auto failed = f.Fetch(region, 0, 4096);
    REQUIRE_FALSE(failed->ok());
    CHECK(f.server->plain_gets == 0);  // nothing written into a window that may still be written
    CHECK(f.channel->fence().state(f.Addr(*region, 0)) == wire::WindowState::kQuarantined);
    CHECK(f.channel->live_targets() == 0);
    f.server->mode = Mode::kDc;
    f.provider->book.fail_fence = false;
    auto refused = f.Fetch(region, 0, 4096);
    REQUIRE_FALSE(refused->ok());
    CHECK(refused->status().code() == StatusCode::kFailedPrecondition);
    CHECK(refused->status().reason() == StatusReason::kWindowQuarantined);
    // Another window is fine, on a new target.
    auto other = f.Fetch(region, 0, 4096, 8192);
    REQUIRE(other->ok());
    CHECK(f.Matches(*region, 8192, 0, 4096));
  }

  TEST_CASE("DC: more concurrent fetches than targets wait for one; all complete") {
    Fixture f(1 << 20, /*max_targets=*/2);
    f.server->defer = true;
    auto region = std::make_shared<FakeRegion>(1 << 20);
    std::vector<std::shared_ptr<std::optional<Result<FetchResult>>>> results;
    for (int i = 0; i < 6; ++i) {
      results.push_back(f.FetchAsync(region, static_cast<uint64_t>(i) * 65536, 65536,
                                     static_cast<uint64_t>(i) * 65536));
    }
    CHECK(f.server->pending() == 2);  // one request per target, the rest wait
    CHECK(f.channel->live_targets() == 2);
    f.server->RunAll();
    std::set<uint32_t> dctns;
    for (int i = 0; i < 6; ++i) {
      REQUIRE(results[i]->has_value());
      REQUIRE((*results[i])->ok());
      CHECK((**results[i])->via == DataPath::kRdma);
      CHECK(f.Matches(*region, static_cast<uint64_t>(i) * 65536, static_cast<uint64_t>(i) * 65536,
                      65536));
    }
    for (const auto& t : f.server->tokens) dctns.insert(t.dctn);
    CHECK(dctns.size() == 2);
    CHECK(f.provider->book.created == 2);
    CHECK(f.channel->counters().rdma_requests == 6);
    CHECK(f.channel->counters().rdma_bytes == 6u * 65536);
  }

  TEST_CASE("DC: no target (creation fails) falls back to HTTP without blaming the endpoint") {
    Fixture f;
    f.provider->fail_create = true;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    auto got = f.Fetch(region, 100, 5000);
    REQUIRE(got->ok());
    CHECK((*got)->via == DataPath::kHttp);
    CHECK(f.Matches(*region, 0, 100, 5000));
    CHECK(f.channel->live_targets() == 0);
    CHECK(f.channel->policy().state(f.server->endpoint(), wire::RdmaOp::kGet) ==
          wire::OpState::kUnknown);
    f.provider->fail_create = false;
    auto next = f.Fetch(region, 0, 4096);
    REQUIRE(next->ok());
    CHECK((*next)->via == DataPath::kRdma);
  }

  TEST_CASE("DC: requests over the limit and foreign windows are refused") {
    Fixture f;
    auto region = std::make_shared<FakeRegion>(64 << 10);
    FetchRequest big{.bucket = "b",
                     .key = "k",
                     .window = {.region = region, .offset = 0, .length = (1ull << 30) + 1}};
    std::optional<Result<FetchResult>> out;
    f.channel->Fetch(std::move(big), [&](Result<FetchResult> r) { out = std::move(r); });
    REQUIRE(out.has_value());
    CHECK(out->status().code() == StatusCode::kInvalidArgument);
    auto outside = f.Fetch(region, 0, 4096, 62 << 10);
    REQUIRE_FALSE(outside->ok());
    CHECK(outside->status().code() == StatusCode::kInvalidArgument);
    CHECK(f.server->rdma_gets == 0);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::channel

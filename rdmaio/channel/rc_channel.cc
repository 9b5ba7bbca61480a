#include "rdmaio/channel/rc_channel.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "common/mutex.h"
#include "common/s3_error_table.h"
#include "common/strings.h"
#include "rdmaio/channel/channel_base_impl.h"
#include "rdmaio/channel/channel_replies.h"
#include "rdmaio/wire/rc_control.h"
#include "rdmaio/wire/rdma_headers.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::channel {
namespace {

constexpr std::string_view kLog = "rdma";
// Our extension on GET READY replies (docs/protocols/rdma-put.md, item 4): the object's size, so
// a fetch knows it after a READY as it does after a session GET (Content-Range).
constexpr std::string_view kObjectSizeHeader = "x-amz-rdma-object-size";
// Zero-length receives kept posted on a session QP (see SendDataGet).
constexpr int kReceivesPosted = 2;

// x-amz-rdma-target: "/bucket/key", URI-encoded as S3 encodes a path (unreserved and '/' kept),
// plus "?partNumber=N&uploadId=U" for an UploadPart.
std::string Target(std::string_view bucket, std::string_view key, int part_number = 0,
                   std::string_view upload_id = {}) {
  std::string out = "/";
  auto append = [&out](std::string_view text, bool keep_slash) {
    for (unsigned char c : text) {
      if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
          (keep_slash && c == '/')) {
        out += static_cast<char>(c);
      } else {
        out += fmt::format("%{:02X}", c);
      }
    }
  };
  append(bucket, false);
  out += '/';
  append(key, true);
  if (part_number > 0) {
    out += fmt::format("?partNumber={}&uploadId=", part_number);
    append(upload_id, false);
  }
  return out;
}

// A decimal or (with "0x") hex header value; nullopt when absent or malformed.
std::optional<uint64_t> NumberHeader(const ControlHeaders& headers, std::string_view name,
                                     int base) {
  std::optional<std::string_view> value = wire::FindHeader(headers, name);
  if (!value) return std::nullopt;
  std::string_view text = Trim(*value);
  if (base == 16 && (text.starts_with("0x") || text.starts_with("0X"))) text.remove_prefix(2);
  uint64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return n;
}

// What a non-2xx answer to PREPARE or READY says about the endpoint. These are not S3 object
// requests, so the reply classifier's table does not apply as is: a plain S3 server answers them
// as requests for bucket ".hipobj-rc" (400 InvalidBucketName, 404 NoSuchBucket, 403, 405), which
// all mean "does not speak hipobj-rc-v2".
wire::EndpointSignal ControlSignal(const ControlReply& reply) {
  const int status = reply.http_status;
  if (status == 503 || status == 413) return wire::EndpointSignal::kNone;  // busy, over a limit
  if (status == 404 &&
      (reply.s3_error_code == "NoSuchKey" || reply.s3_error_code == "NoSuchUpload")) {
    return wire::EndpointSignal::kNone;
  }
  if (status == 403 && reply.s3_error_code == kS3InvalidObjectState) {
    return wire::EndpointSignal::kNone;
  }
  if (status >= 500 && status != 501) return wire::EndpointSignal::kFailed;
  return wire::EndpointSignal::kDeclined;
}

}  // namespace

// A fetch, or a put whose bucket, key, window and cancel token are mirrored in `request`
// (object_offset 0), so the session, fence and fallback code reads one place.
struct RcWork : ChannelWork {
  bool is_put = false;
  PutRequest put;  // is_put: part number, upload id, content type
  PutCallback put_done;
};

struct RcSession {
  std::unique_ptr<RcSessionQp> qp;  // null until created
  std::string id;                   // the server's session; empty until PREPARE answered
  int receives_posted = 0;          // outstanding zero-length receives
  uint64_t cookie = 0;              // of the request running on it
};

// The whole shared state machine, for RC's types (channel_base_impl.h).
template class ChannelBase<RcChannel, RcQpProvider, std::shared_ptr<RcSession>, RcWork>;

std::shared_ptr<RcChannel> RcChannel::Create(std::shared_ptr<ControlPlane> control,
                                             std::shared_ptr<RcQpProvider> qps, const Clock& clock,
                                             RcChannelOptions options) {
  return std::shared_ptr<RcChannel>(
      new RcChannel(std::move(control), std::move(qps), clock, std::move(options)));
}

RcChannel::RcChannel(std::shared_ptr<ControlPlane> control, std::shared_ptr<RcQpProvider> qps,
                     const Clock& clock, RcChannelOptions options)
    : RcChannelBase(std::move(control), std::move(qps), clock,
                    ChannelBaseOptions{
                        .name = "RcChannel",
                        .transport = "rdma-rc",
                        .log_tag = "",
                        .max_slots = options.max_sessions,
                        .max_fetch_bytes = options.max_request_bytes,
                        .request_timeout = options.request_timeout,
                        .policy = std::move(options.policy),
                    },
                    [] { return std::make_shared<Session>(); }),
      random_(std::random_device{}()) {}

RcChannel::~RcChannel() = default;

bool RcChannel::session_extension_confirmed() const {
  MutexLock lock(mutex_);
  return session_extension_;
}

uint64_t RcChannel::NewCookie() {
  MutexLock lock(mutex_);
  uint64_t cookie = 0;
  while (cookie == 0) cookie = random_();
  return cookie;
}

void RcChannel::Put(PutRequest request, PutCallback done) {
  const RegisteredWindow& window = request.window;
  if (Status checked = CheckWindow(window, kMaxPutBytes, "RcChannel::Put"); !checked.ok()) {
    done(std::move(checked));
    return;
  }
  if (request.part_number < 0 || request.part_number > 10000 ||
      (request.part_number > 0) == request.upload_id.empty()) {
    done(
        Status::InvalidArgument("RcChannel::Put: an UploadPart needs part number 1..10000 and an "
                                "upload id, a PUT neither"));
    return;
  }
  Result<WindowAddress> where = provider_->Locate(window);
  if (!where.ok()) {
    done(where.status());
    return;
  }
  auto work = std::make_shared<Work>();
  work->is_put = true;
  work->op = request.part_number > 0 ? wire::RdmaOp::kUploadPart : wire::RdmaOp::kPut;
  work->what =
      request.part_number > 0
          ? fmt::format("UploadPart {}/{} #{} ({} bytes)", request.bucket, request.key,
                        request.part_number, window.length)
          : fmt::format("PUT {}/{} ({} bytes)", request.bucket, request.key, window.length);
  work->request.bucket = request.bucket;
  work->request.key = request.key;
  work->request.window = request.window;
  work->request.cancel = request.cancel;
  work->put = std::move(request);
  work->put_done = std::move(done);
  work->where = *where;
  if (Status admitted = Admit(*work); !admitted.ok()) {
    work->put_done(std::move(admitted));
    return;
  }
  // PREPARE stores nothing on a server that does not speak hipobj-rc-v2, so a PUT may try RDMA
  // on an endpoint nothing is known about; SendRdma sends a session PUT only once that is safe.
  const wire::Route route = policy_.ChooseTwoPhaseWrite(control_->endpoint(), work->op);
  Route(std::move(work), route);
}

void RcChannel::SendRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  if (work->is_put && session->qp != nullptr) {
    bool extension;
    {
      MutexLock lock(mutex_);
      extension = session_extension_;
    }
    // The 0-byte-object hazard: an empty-bodied PUT goes only to an endpoint that has answered a
    // session request correctly and has not been seen ignoring a token since.
    if (!extension || !policy_.WritesAllowed(control_->endpoint())) ResetSession(*session);
  }
  if (session->qp == nullptr) {
    OpenSession(std::move(work), std::move(session));
  } else if (work->is_put) {
    SendSessionPut(std::move(work), std::move(session));
  } else {
    SendDataGet(std::move(work), std::move(session));
  }
}

void RcChannel::ResetSession(Session& session) {
  if (!session.id.empty()) {
    // Best effort, as in DropSession: the server's side goes sooner than its idle timeout.
    Result<wire::HeaderList> cancel =
        wire::EncodeRcCancel({.session = session.id, .cookie = session.cookie});
    if (cancel.ok()) {
      control_->Post({.path = std::string(wire::kRcCancelPath), .headers = std::move(*cancel)},
                     [](Result<ControlReply>) {});
    }
  }
  // Idle: nothing is in flight on it, so destroying the QP is enough.
  session.qp.reset();
  session.id.clear();
  session.receives_posted = 0;
  session.cookie = 0;
}

void RcChannel::OnSignal(wire::EndpointSignal signal) {
  if (signal == wire::EndpointSignal::kTokenIgnored) {
    // Whatever the endpoint confirmed before, it now ignores tokens: session PUTs wait for a new
    // session request answered correctly.
    MutexLock lock(mutex_);
    session_extension_ = false;
  }
}

void RcChannel::OpenSession(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  Result<std::unique_ptr<RcSessionQp>> qp = provider_->CreateQp();
  if (!qp.ok()) {
    // Our side's problem (QP limit, device gone), not the endpoint's.
    REELFS_LOG_WARN(kLog, "{}: no RC queue pair: {}", work->what, qp.status().ToString());
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), /*fence=*/false, /*retry=*/true, qp.status());
    return;
  }
  session->qp = std::move(qp).value();
  session->cookie = NewCookie();
  const RcEndpoint& local = session->qp->local();
  wire::RcPrepareRequest prepare;
  prepare.token = wire::RcToken{.transport = wire::RcTransport::kRc,
                                .qpn = local.qpn,
                                .gid = local.gid,
                                .rkey = work->where.rkey,
                                .addr = work->where.addr,
                                .length = work->request.window.length,
                                .port = local.port,
                                .lid = local.lid};
  prepare.psn = local.psn;
  prepare.cookie = session->cookie;
  prepare.op = work->is_put ? wire::RcOp::kPut : wire::RcOp::kGet;
  prepare.target =
      Target(work->request.bucket, work->request.key, work->put.part_number, work->put.upload_id);
  prepare.size = work->request.window.length;
  prepare.offset = work->request.object_offset;  // 0 for a put
  Result<wire::HeaderList> headers = wire::EncodeRcPrepare(prepare);
  Status posted = headers.ok() ? session->qp->PostRecv(0) : headers.status();
  if (!posted.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), /*fence=*/true, /*retry=*/true, posted);
    return;
  }
  ++session->receives_posted;
  ControlPost post{.path = std::string(wire::kRcPreparePath), .headers = std::move(*headers)};
  control_->Post(std::move(post), [self = shared_from_this(), work,
                                   session](Result<ControlReply> reply) mutable {
    if (self->AbandonIfControlFailed(work, session, reply, "PREPARE")) return;
    Result<wire::RcPrepareReply> prepared = wire::DecodeRcPrepareReply(reply->rdma_headers);
    Status connected = prepared.ok() ? Status::Ok() : prepared.status();
    if (prepared.ok()) {
      session->id = prepared->session;
      connected = session->qp->Connect(RcEndpoint{.qpn = prepared->qpn,
                                                  .psn = prepared->psn,
                                                  .gid = prepared->server_token.gid,
                                                  .port = prepared->server_token.port,
                                                  .lid = prepared->server_token.lid});
    }
    if (!connected.ok()) {
      self->Report(*work, wire::EndpointSignal::kFailed);
      self->AbandonRdma(std::move(work), std::move(session), true, true,
                        connected.WithContext("PREPARE reply"));
      return;
    }
    self->SendReady(std::move(work), std::move(session));
  });
}

bool RcChannel::AbandonIfControlFailed(std::shared_ptr<Work>& work,
                                       std::shared_ptr<Session>& session,
                                       const Result<ControlReply>& reply, const char* step) {
  if (!reply.ok()) {
    // No answer: the session is fenced; retry over HTTP unless the caller cancelled.
    const bool cancelled = reply.status().code() == StatusCode::kCancelled;
    Report(*work, wire::ClassifyNoResponse(cancelled).endpoint);
    AbandonRdma(std::move(work), std::move(session), true, !cancelled,
                reply.status().WithContext(step));
    return true;
  }
  if (!IsSuccess(reply->http_status)) {
    Report(*work, ControlSignal(*reply));
    AbandonRdma(std::move(work), std::move(session), true, true, ErrorFromReply(*reply, step));
    return true;
  }
  return false;
}

void RcChannel::SendReady(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  wire::RcReadyRequest ready{.session = session->id,
                             .cookie = session->cookie,
                             .qpn = session->qp->local().qpn,
                             .mr_addr = work->where.addr,
                             .mr_rkey = work->where.rkey};
  Result<wire::HeaderList> headers = wire::EncodeRcReady(ready);
  if (!headers.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), true, true, headers.status());
    return;
  }
  ControlPost post{.path = std::string(wire::kRcReadyPath), .headers = std::move(*headers)};
  control_->Post(std::move(post),
                 [self = shared_from_this(), work, session](Result<ControlReply> reply) mutable {
                   if (self->AbandonIfControlFailed(work, session, reply, "READY")) return;
                   self->OnReadyReply(std::move(work), std::move(session), *reply);
                 });
}

void RcChannel::OnReadyReply(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                             const ControlReply& reply) {
  const uint64_t asked = work->request.window.length;
  Result<wire::RcReadyReply> done = wire::DecodeRcReadyReply(reply.rdma_headers);
  Status checked = done.ok() ? Status::Ok() : done.status();
  if (work->is_put) {
    // A payload is stored whole or not at all: the count must be exact, and an ETag must name it.
    if (checked.ok()) checked = wire::CheckRcReadyReply(*done, session->cookie, asked);
    if (checked.ok() && reply.etag.empty() && Unquote(done->etag).empty()) {
      checked = Status::DataLoss("READY answered a PUT without an ETag");
    }
  } else {
    // A transfer shorter than asked ends at the end of the object (as a short HTTP range does);
    // CheckRcReadyReply wants the exact count, so it is checked against what was moved, after
    // the bounds.
    if (checked.ok() && (done->bytes_transferred == 0 || done->bytes_transferred > asked)) {
      checked = Status::DataLoss(
          fmt::format("READY moved {} bytes for a {}-byte window", done->bytes_transferred, asked));
    }
    if (checked.ok()) {
      checked = wire::CheckRcReadyReply(*done, session->cookie, done->bytes_transferred);
    }
  }
  if (!checked.ok()) {
    Report(*work, wire::EndpointSignal::kFailed);
    AbandonRdma(std::move(work), std::move(session), true, true,
                checked.WithContext("READY reply"));
    return;
  }
  Report(*work, wire::EndpointSignal::kConfirmed);
  uint64_t object_size = 0;
  if (!work->is_put) {
    const std::optional<uint64_t> total = NumberHeader(reply.rdma_headers, kObjectSizeHeader, 10);
    if (total) {
      object_size = *total;
    } else if (done->bytes_transferred < asked) {
      // A server without the extension: a short transfer still tells where the object ends.
      object_size = work->request.object_offset + done->bytes_transferred;
    }
  }
  std::string etag = !reply.etag.empty() ? reply.etag : std::string(Unquote(done->etag));
  FinishRdma(std::move(work), std::move(session), /*opened=*/true, done->bytes_transferred,
             object_size, std::move(etag));
}

void RcChannel::FinishRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                           bool opened, uint64_t bytes, uint64_t object_size, std::string etag) {
  Count([&](ChannelCounters& counters) {
    if (opened) ++counters.sessions_opened;
    if (work->is_put) {
      ++counters.rdma_put_requests;
      counters.rdma_put_bytes += bytes;
    } else {
      ++counters.rdma_requests;
      counters.rdma_bytes += bytes;
    }
  });
  Result<int> reaped = session->qp->ReapReceives();
  fence_.Finish(work->ticket, /*fence_needed=*/false);
  work->ticket_open = false;
  if (reaped.ok()) {
    session->receives_posted -= *reaped;
    Release(std::move(session));
  } else {
    DropSession(std::move(session)).IgnoreError();  // the bytes moved; the QP is not healthy
  }
  if (work->is_put) {
    Complete(work, PutResult{.etag = std::move(etag), .bytes = bytes, .via = DataPath::kRdma});
  } else {
    Complete(work, FetchResult{.bytes = bytes,
                               .object_size = object_size,
                               .etag = std::move(etag),
                               .via = DataPath::kRdma});
  }
}

Result<ControlHeaders> RcChannel::BeginSessionRequest(Work& work, Session& session,
                                                      bool post_receives) {
  session.cookie = NewCookie();
  // Reaping finds a QP that went to ERR while idle, before a request is sent through it. A GET's
  // last write consumes a receive, and its completion may still be on its way when the HTTP
  // answer of the previous request arrived, so one spare stays posted: a write that finds none
  // would be refused (RNR) until the server gives up. A PUT's server only reads: none consumed.
  Result<int> reaped = session.qp->ReapReceives();
  if (!reaped.ok()) return reaped.status();
  session.receives_posted -= *reaped;
  while (post_receives && session.receives_posted < kReceivesPosted) {
    if (Status posted = session.qp->PostRecv(0); !posted.ok()) return posted;
    ++session.receives_posted;
  }
  const RcEndpoint& local = session.qp->local();
  Result<std::string> token =
      wire::EncodeRcToken(wire::RcToken{.transport = wire::RcTransport::kRc,
                                        .qpn = local.qpn,
                                        .gid = local.gid,
                                        .rkey = work.where.rkey,
                                        .addr = work.where.addr,
                                        .length = work.request.window.length,
                                        .port = local.port,
                                        .lid = local.lid});
  if (!token.ok()) return token.status();
  return ControlHeaders{
      {std::string(wire::header::kToken), std::move(*token)},
      {std::string(wire::header::kSession), session.id},
      {std::string(wire::header::kCookie), fmt::format("{:016x}", session.cookie)}};
}

void RcChannel::SendDataGet(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  Result<ControlHeaders> headers = BeginSessionRequest(*work, *session, /*post_receives=*/true);
  if (!headers.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), true, true, headers.status());
    return;
  }
  SendDataRequest(std::move(work), std::move(session), std::move(*headers));
}

void RcChannel::OnRdmaDone(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                           FetchResult result) {
  {
    // The server knows the session extension: session PUTs are safe from now on.
    MutexLock lock(mutex_);
    session_extension_ = true;
  }
  FinishRdma(std::move(work), std::move(session), /*opened=*/false, result.bytes,
             result.object_size, std::move(result.etag));
}

void RcChannel::SendSessionPut(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  Result<ControlHeaders> headers = BeginSessionRequest(*work, *session, /*post_receives=*/false);
  if (!headers.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), true, true, headers.status());
    return;
  }
  const uint64_t size = work->request.window.length;
  ControlPut put;
  put.bucket = work->request.bucket;
  put.key = work->request.key;
  put.part_number = work->put.part_number;
  put.upload_id = work->put.upload_id;
  put.headers = std::move(*headers);
  put.headers.emplace_back(std::string(wire::header::kSize), std::to_string(size));
  put.content_type = work->put.content_type;
  put.cancel = work->request.cancel;
  control_->Put(std::move(put),
                [self = shared_from_this(), work, session](Result<ControlReply> reply) mutable {
                  self->OnPutReply(std::move(work), std::move(session), std::move(reply));
                });
}

void RcChannel::OnPutReply(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                           Result<ControlReply> reply) {
  if (!reply.ok()) {
    // The server may still be reading the window: fenced before the retry or `done`.
    const bool cancelled = reply.status().code() == StatusCode::kCancelled;
    const wire::ReplyVerdict verdict = wire::ClassifyNoResponse(cancelled);
    Report(*work, verdict.endpoint);
    AbandonRdma(std::move(work), std::move(session), verdict.fence_window,
                verdict.next == wire::NextStep::kRetryOverHttp, reply.status());
    return;
  }
  const uint64_t size = work->request.window.length;
  wire::ReplyInput input;
  input.op = work->op;
  input.http_status = reply->http_status;
  wire::FillReplyHeaders(reply->rdma_headers, &input);
  input.s3_error_code = reply->s3_error_code;
  input.etag = reply->etag;
  input.expected_bytes = size;
  wire::ReplyVerdict verdict = wire::ClassifyReply(input);
  std::string etag = reply->etag;
  if (etag.empty()) {
    if (auto rdma_etag = wire::FindHeader(reply->rdma_headers, wire::header::kEtag)) {
      etag = std::string(Unquote(*rdma_etag));
    }
  }
  if (verdict.kind == wire::ReplyKind::kRdmaDone) {
    // hipobj-rc-v2 answers a session PUT as READY does: our cookie back, and an ETag.
    const std::optional<uint64_t> echo =
        NumberHeader(reply->rdma_headers, wire::header::kCookie, 16);
    if (!echo || *echo != session->cookie || etag.empty()) {
      verdict.kind = wire::ReplyKind::kProtocolViolation;
      verdict.next = wire::NextStep::kRetryOverHttp;
      verdict.endpoint = wire::EndpointSignal::kFailed;
      verdict.fence_window = true;
      verdict.reason = !echo || *echo != session->cookie
                           ? "session PUT answer does not echo our cookie"
                           : "session PUT answer without an ETag";
    }
  } else if (verdict.kind == wire::ReplyKind::kPutDoneUnmarked) {
    // Fine for AIStor's DC PUT, never for ours: a server that knows the session extension marks
    // its answer, so one that did not stored an empty body. The HTTP retry overwrites it.
    verdict.next = wire::NextStep::kRetryOverHttp;
    verdict.endpoint = wire::EndpointSignal::kTokenIgnored;
    verdict.fence_window = true;
    verdict.reason = "session PUT answered without x-amz-rdma-reply: token ignored";
  }
  Report(*work, verdict.endpoint);
  REELFS_LOG_DEBUG(kLog, "{}: {} ({})", work->what, wire::ReplyKindName(verdict.kind),
                   verdict.reason);
  switch (verdict.next) {
    case wire::NextStep::kDone: {
      {
        MutexLock lock(mutex_);
        session_extension_ = true;
      }
      FinishRdma(std::move(work), std::move(session), /*opened=*/false, size, 0, std::move(etag));
      return;
    }
    case wire::NextStep::kUseBody:  // GET only; a PUT answer has no payload to use
    case wire::NextStep::kRetryOverHttp:
      AbandonRdma(std::move(work), std::move(session), verdict.fence_window, true,
                  Status::Unavailable(verdict.reason));
      return;
    case wire::NextStep::kFail: {
      Status failure = ErrorFromReply(*reply, work->what);
      AbandonRdma(std::move(work), std::move(session), verdict.fence_window, false,
                  std::move(failure));
      return;
    }
  }
}

void RcChannel::PutOverHttp(std::shared_ptr<Work> work) {
  const RegisteredWindow& window = work->request.window;
  const std::span<std::byte> host = window.region->host_bytes();
  if (host.empty()) {
    fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    Fail(work,
         Status::Unimplemented(work->what + ": HTTP fallback from device memory is not supported"));
    return;
  }
  ControlPut put;
  put.bucket = work->request.bucket;
  put.key = work->request.key;
  put.part_number = work->put.part_number;
  put.upload_id = work->put.upload_id;
  put.body = host.subspan(window.offset, window.length);
  put.content_type = work->put.content_type;
  put.cancel = work->request.cancel;
  control_->Put(std::move(put), [self = shared_from_this(), work](Result<ControlReply> reply) {
    // Only our own HTTP client read the window, and it is done: no fence needed.
    self->fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    if (!reply.ok()) return self->Fail(work, reply.status().WithContext(work->what));
    if (!IsSuccess(reply->http_status)) {
      return self->Fail(work, ErrorFromReply(*reply, work->what));
    }
    const uint64_t bytes = work->request.window.length;
    self->Count([&](ChannelCounters& counters) {
      ++counters.http_put_requests;
      counters.http_put_bytes += bytes;
      if (work->rdma_tried) ++counters.fallbacks;
    });
    self->Complete(work, PutResult{.etag = reply->etag, .bytes = bytes, .via = DataPath::kHttp});
  });
}

Status RcChannel::FenceWindow(Work& work, std::shared_ptr<Session> session) {
  Status fenced = session ? DropSession(std::move(session)) : Status::Ok();
  if (!fenced.ok()) return fenced;
  fence_.MarkFenced(work.where.addr).IgnoreError();
  return Status::Ok();
}

void RcChannel::GiveBack(std::shared_ptr<Session> session) {
  if (!session) return;
  if (session->qp == nullptr || session->id.empty()) {
    DropSession(std::move(session)).IgnoreError();
  } else {
    Release(std::move(session));
  }
}

void RcChannel::SendOverHttp(std::shared_ptr<Work> work) {
  if (work->is_put) {
    PutOverHttp(std::move(work));
  } else {
    FetchOverHttp(std::move(work));
  }
}

Status RcChannel::DropSession(std::shared_ptr<Session> session) {
  Status fenced = Status::Ok();
  if (session->qp) {
    fenced = session->qp->Fence();
    if (!session->id.empty()) {
      // Best effort: frees the server's side of the session sooner than its own timeout would.
      Result<wire::HeaderList> cancel =
          wire::EncodeRcCancel({.session = session->id, .cookie = session->cookie});
      if (cancel.ok()) {
        control_->Post({.path = std::string(wire::kRcCancelPath), .headers = std::move(*cancel)},
                       [](Result<ControlReply>) {});
      }
    }
  }
  if (session->qp) Count([](ChannelCounters& counters) { ++counters.sessions_fenced; });
  // The QP is destroyed here, after the fence; the session object is ours alone by now.
  session.reset();
  Drop();
  return fenced;
}

void RcChannel::Complete(const std::shared_ptr<Work>& work, Result<PutResult> result) {
  if (!result.ok()) Count([](ChannelCounters& counters) { ++counters.failed; });
  PutCallback done = std::move(work->put_done);
  done(std::move(result));
}

void RcChannel::Fail(const std::shared_ptr<Work>& work, Status failure) {
  if (work->is_put) {
    Complete(work, Result<PutResult>(std::move(failure)));
  } else {
    Complete(work, Result<FetchResult>(std::move(failure)));
  }
}

}  // namespace reelfs::rdmaio::channel

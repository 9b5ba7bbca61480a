#include "rdmaio/verbs/rc_channel.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "rdmaio/wire/rc_control.h"
#include "rdmaio/wire/rdma_headers.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::verbs {
namespace {

constexpr std::string_view kLog = "rdma";
constexpr wire::RdmaOp kGet = wire::RdmaOp::kGet;
// Zero-length receives kept posted on a session QP (see SendDataGet).
constexpr int kReceivesPosted = 2;

// x-amz-rdma-target: "/bucket/key", URI-encoded as S3 encodes a path (unreserved and '/' kept).
std::string Target(std::string_view bucket, std::string_view key) {
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
  return out;
}

bool IsSuccess(int status) { return status >= 200 && status < 300; }

// What a non-2xx answer to PREPARE or READY says about the endpoint. These are not S3 object
// requests, so the reply classifier's table does not apply as is: a plain S3 server answers them
// as requests for bucket ".hipobj-rc" (400 InvalidBucketName, 404 NoSuchBucket, 403, 405), which
// all mean "does not speak hipobj-rc-v2".
wire::EndpointSignal ControlSignal(const ControlReply& reply) {
  const int status = reply.http_status;
  if (status == 503 || status == 413) return wire::EndpointSignal::kNone;  // busy, over a limit
  if (status == 404 && reply.s3_error_code == "NoSuchKey") return wire::EndpointSignal::kNone;
  if (status == 403 && reply.s3_error_code == "InvalidObjectState") {
    return wire::EndpointSignal::kNone;
  }
  if (status >= 500 && status != 501) return wire::EndpointSignal::kFailed;
  return wire::EndpointSignal::kDeclined;
}

// The error a non-2xx answer to the data request stands for (data_channel.h's codes).
Status ErrorFromReply(const ControlReply& reply, std::string_view what) {
  StatusDetail detail{.http_status = reply.http_status, .s3_code = reply.s3_error_code};
  StatusCode code = StatusCode::kInternal;
  const int s = reply.http_status;
  if (s == 404) {
    code = StatusCode::kNotFound;
  } else if (s == 412 || (s == 403 && reply.s3_error_code == "InvalidObjectState")) {
    code = StatusCode::kFailedPrecondition;
  } else if (s == 403) {
    code = StatusCode::kPermissionDenied;
  } else if (s == 416) {
    code = StatusCode::kOutOfRange;
  } else if (s == 400) {
    code = StatusCode::kInvalidArgument;
  } else if (s >= 500) {
    code = StatusCode::kUnavailable;
  }
  return Status(code, fmt::format("{}: HTTP {} {}", what, reply.http_status, reply.s3_error_code),
                std::move(detail));
}

}  // namespace

struct RcChannel::Work {
  FetchRequest request;
  FetchCallback done;
  WindowAddress where;
  wire::WindowFence::Ticket ticket;
  bool ticket_open = false;
  wire::Route route = wire::Route::kHttp;
  bool reported = false;  // the policy has this request's verdict
  bool rdma_tried = false;
  std::string what;  // "GET bucket/key [offset, +length)"

  bool cancelled() const { return request.cancel && request.cancel->cancelled(); }
};

struct RcChannel::Session {
  std::unique_ptr<RcSessionQp> qp;  // null until created
  std::string id;                   // the server's session; empty until PREPARE answered
  int receives_posted = 0;          // outstanding zero-length receives
  uint64_t cookie = 0;              // of the request running on it
};

std::shared_ptr<RcChannel> RcChannel::Create(std::shared_ptr<ControlPlane> control,
                                             std::shared_ptr<RcQpProvider> qps, const Clock& clock,
                                             RcChannelOptions options) {
  return std::shared_ptr<RcChannel>(
      new RcChannel(std::move(control), std::move(qps), clock, std::move(options)));
}

RcChannel::RcChannel(std::shared_ptr<ControlPlane> control, std::shared_ptr<RcQpProvider> qps,
                     const Clock& clock, RcChannelOptions options)
    : control_(std::move(control)),
      qps_(std::move(qps)),
      options_(std::move(options)),
      policy_(clock, options_.policy),
      fence_(clock, {}),
      random_(std::random_device{}()) {
  counters_.endpoint = control_->endpoint();
  counters_.transport = "rdma-rc";
}

RcChannel::~RcChannel() = default;

RcChannelCounters RcChannel::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

size_t RcChannel::live_sessions() const {
  std::lock_guard lock(mutex_);
  return live_sessions_;
}

uint64_t RcChannel::NewCookie() {
  std::lock_guard lock(mutex_);
  uint64_t cookie = 0;
  while (cookie == 0) cookie = random_();
  return cookie;
}

void RcChannel::Fetch(FetchRequest request, FetchCallback done) {
  const RegisteredWindow& window = request.window;
  if (!window.region || window.length == 0) {
    done(Status::InvalidArgument("RcChannel::Fetch: empty window"));
    return;
  }
  if (window.length > options_.max_request_bytes) {
    done(Status::InvalidArgument(fmt::format("RcChannel::Fetch: {} bytes is over the {}-byte limit",
                                             window.length, options_.max_request_bytes)));
    return;
  }
  Result<WindowAddress> where = qps_->Locate(window);
  if (!where.ok()) {
    done(where.status());
    return;
  }
  auto work = std::make_shared<Work>();
  work->what = fmt::format("GET {}/{} [{}, +{})", request.bucket, request.key,
                           request.object_offset, window.length);
  work->request = std::move(request);
  work->done = std::move(done);
  work->where = *where;
  Result<wire::WindowFence::Ticket> ticket =
      fence_.Begin(work->where.addr, options_.request_timeout);
  if (!ticket.ok()) {
    work->done(ticket.status().WithContext(work->what));
    return;
  }
  work->ticket = *ticket;
  work->ticket_open = true;
  work->route = policy_.Choose(control_->endpoint(), kGet);
  if (work->route == wire::Route::kHttp) {
    FetchOverHttp(std::move(work));
    return;
  }
  std::shared_ptr<Session> session;
  if (!AcquireSession(work, &session)) return;  // queued: a session's release starts it
  StartRdma(std::move(work), std::move(session));
}

bool RcChannel::AcquireSession(const std::shared_ptr<Work>& work,
                               std::shared_ptr<Session>* session) {
  std::lock_guard lock(mutex_);
  if (!idle_.empty()) {
    *session = std::move(idle_.back());
    idle_.pop_back();
    return true;
  }
  if (live_sessions_ < options_.max_sessions) {
    ++live_sessions_;
    *session = std::make_shared<Session>();
    return true;
  }
  waiting_.push_back(work);
  return false;
}

void RcChannel::StartNextWaiting() {
  std::shared_ptr<Work> work;
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mutex_);
    if (waiting_.empty()) return;
    if (!idle_.empty()) {
      session = std::move(idle_.back());
      idle_.pop_back();
    } else if (live_sessions_ < options_.max_sessions) {
      ++live_sessions_;
      session = std::make_shared<Session>();
    } else {
      return;
    }
    work = std::move(waiting_.front());
    waiting_.pop_front();
  }
  StartRdma(std::move(work), std::move(session));
}

void RcChannel::StartRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  if (work->cancelled()) {
    Report(*work, wire::EndpointSignal::kNone);  // releases a probe
    Status cancelled = Status::Cancelled(work->what + ": cancelled");
    AbandonRdma(std::move(work), std::move(session), /*fence=*/false, /*retry=*/false,
                std::move(cancelled));
    return;
  }
  work->rdma_tried = true;
  if (session->qp == nullptr) {
    OpenSession(std::move(work), std::move(session));
  } else {
    SendDataGet(std::move(work), std::move(session));
  }
}

void RcChannel::Report(Work& work, wire::EndpointSignal signal) {
  if (work.reported || work.route == wire::Route::kHttp) return;
  work.reported = true;
  policy_.Report(control_->endpoint(), kGet, work.route, signal);
}

void RcChannel::OpenSession(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  Result<std::unique_ptr<RcSessionQp>> qp = qps_->CreateQp();
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
  prepare.op = wire::RcOp::kGet;
  prepare.target = Target(work->request.bucket, work->request.key);
  prepare.size = work->request.window.length;
  prepare.offset = work->request.object_offset;
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
  control_->Post(std::move(post), [self = shared_from_this(), work,
                                   session](Result<ControlReply> reply) mutable {
    if (self->AbandonIfControlFailed(work, session, reply, "READY")) return;
    const uint64_t asked = work->request.window.length;
    Result<wire::RcReadyReply> done = wire::DecodeRcReadyReply(reply->rdma_headers);
    Status checked = done.ok() ? Status::Ok() : done.status();
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
    if (!checked.ok()) {
      self->Report(*work, wire::EndpointSignal::kFailed);
      self->AbandonRdma(std::move(work), std::move(session), true, true,
                        checked.WithContext("READY reply"));
      return;
    }
    self->Report(*work, wire::EndpointSignal::kConfirmed);
    FetchResult result{.bytes = done->bytes_transferred,
                       .object_size = done->bytes_transferred < asked
                                          ? work->request.object_offset + done->bytes_transferred
                                          : 0,
                       .etag = done->etag,
                       .via = DataPath::kRdma};
    {
      std::lock_guard lock(self->mutex_);
      ++self->counters_.sessions_opened;
      ++self->counters_.rdma_requests;
      self->counters_.rdma_bytes += result.bytes;
    }
    Result<int> reaped = session->qp->ReapReceives();
    self->fence_.Finish(work->ticket, /*fence_needed=*/false);
    work->ticket_open = false;
    if (reaped.ok()) {
      session->receives_posted -= *reaped;
      self->ReleaseSession(std::move(session));
    } else {
      self->DropSession(std::move(session)).IgnoreError();  // the bytes are in; the QP is not
    }
    self->Complete(work, std::move(result));
  });
}

void RcChannel::SendDataGet(std::shared_ptr<Work> work, std::shared_ptr<Session> session) {
  session->cookie = NewCookie();
  // The server's last write consumes a receive. Its completion may still be on its way when the
  // HTTP answer of the previous request arrived, so one spare stays posted: a write that finds
  // none would be refused (RNR) until the server gives up.
  Result<int> reaped = session->qp->ReapReceives();
  Status ready = reaped.ok() ? Status::Ok() : reaped.status();
  if (reaped.ok()) session->receives_posted -= *reaped;
  while (ready.ok() && session->receives_posted < kReceivesPosted) {
    ready = session->qp->PostRecv(0);
    if (ready.ok()) ++session->receives_posted;
  }
  const RcEndpoint& local = session->qp->local();
  Result<std::string> token =
      wire::EncodeRcToken(wire::RcToken{.transport = wire::RcTransport::kRc,
                                        .qpn = local.qpn,
                                        .gid = local.gid,
                                        .rkey = work->where.rkey,
                                        .addr = work->where.addr,
                                        .length = work->request.window.length,
                                        .port = local.port,
                                        .lid = local.lid});
  if (ready.ok() && !token.ok()) ready = token.status();
  if (!ready.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(session), true, true, ready);
    return;
  }
  ControlGet get;
  get.bucket = work->request.bucket;
  get.key = work->request.key;
  get.offset = work->request.object_offset;
  get.length = work->request.window.length;
  get.headers = {{std::string(wire::header::kToken), std::move(*token)},
                 {std::string(wire::header::kSession), session->id},
                 {std::string(wire::header::kCookie), fmt::format("{:016x}", session->cookie)}};
  get.if_match = work->request.if_match;
  const std::span<std::byte> host = work->request.window.region->host_bytes();
  if (!host.empty()) get.destination = host.subspan(work->request.window.offset, get.length);
  get.cancel = work->request.cancel;
  control_->Get(std::move(get),
                [self = shared_from_this(), work, session](Result<ControlReply> reply) mutable {
                  self->OnDataReply(std::move(work), std::move(session), std::move(reply));
                });
}

void RcChannel::OnDataReply(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                            Result<ControlReply> reply) {
  if (!reply.ok()) {
    const bool cancelled = reply.status().code() == StatusCode::kCancelled;
    const wire::ReplyVerdict verdict = wire::ClassifyNoResponse(cancelled);
    Report(*work, verdict.endpoint);
    AbandonRdma(std::move(work), std::move(session), verdict.fence_window,
                verdict.next == wire::NextStep::kRetryOverHttp, reply.status());
    return;
  }
  const uint64_t offset = work->request.object_offset;
  const uint64_t length = work->request.window.length;
  wire::ReplyInput input;
  input.op = kGet;
  input.http_status = reply->http_status;
  wire::FillReplyHeaders(reply->rdma_headers, &input);
  input.body_length = reply->body_bytes;
  input.s3_error_code = reply->s3_error_code;
  input.etag = reply->etag;
  // Past the end of the object a range is short, as with HTTP.
  input.expected_bytes =
      reply->object_size == 0
          ? length
          : (offset < reply->object_size ? std::min(length, reply->object_size - offset) : 0);
  const wire::ReplyVerdict verdict = wire::ClassifyReply(input);
  Report(*work, verdict.endpoint);
  REELFS_LOG_DEBUG(kLog, "{}: {} ({})", work->what, wire::ReplyKindName(verdict.kind),
                   verdict.reason);
  switch (verdict.next) {
    case wire::NextStep::kDone: {
      FetchResult result{.bytes = verdict.bytes_transferred,
                         .object_size = reply->object_size,
                         .etag = reply->etag,
                         .via = DataPath::kRdma};
      {
        std::lock_guard lock(mutex_);
        ++counters_.rdma_requests;
        counters_.rdma_bytes += result.bytes;
      }
      Result<int> reaped = session->qp->ReapReceives();
      fence_.Finish(work->ticket, /*fence_needed=*/false);
      work->ticket_open = false;
      if (reaped.ok()) {
        session->receives_posted -= *reaped;
        ReleaseSession(std::move(session));
      } else {
        DropSession(std::move(session)).IgnoreError();
      }
      Complete(work, std::move(result));
      return;
    }
    case wire::NextStep::kUseBody: {
      // The body is already in the window (the control plane put it there). A verdict that asks
      // for a fence drops the session before the caller may look at it.
      FetchResult result{.bytes = reply->body_bytes,
                         .object_size = reply->object_size,
                         .etag = reply->etag,
                         .via = DataPath::kHttp};
      if (verdict.fence_window) {
        work->ticket_open = false;
        fence_.Abandon(work->ticket);
        Status fenced = DropSession(std::move(session));
        if (!fenced.ok()) {
          Complete(work, fenced.WithContext(work->what + ": fencing the window"));
          return;
        }
        fence_.MarkFenced(work->where.addr).IgnoreError();
      } else {
        fence_.Finish(work->ticket, false);
        work->ticket_open = false;
        ReleaseSession(std::move(session));
      }
      {
        std::lock_guard lock(mutex_);
        ++counters_.http_requests;
        ++counters_.fallbacks;
        counters_.http_bytes += result.bytes;
      }
      Complete(work, std::move(result));
      return;
    }
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

void RcChannel::AbandonRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                            bool fence, bool retry_over_http, Status failure) {
  REELFS_LOG_DEBUG(kLog, "{}: RDMA attempt over ({}){}", work->what, failure.ToString(),
                   retry_over_http ? "; retrying over HTTP" : "");
  if (fence) {
    // Quarantine first, then kill the QP the server would write through, then lift it.
    if (work->ticket_open) fence_.Abandon(work->ticket);
    work->ticket_open = false;
    Status fenced = session ? DropSession(std::move(session)) : Status::Ok();
    if (!fenced.ok()) {
      // The window stays quarantined: nobody may use it again (WindowFence refuses it).
      Complete(work, fenced.WithContext(work->what + ": fencing the window"));
      return;
    }
    fence_.MarkFenced(work->where.addr).IgnoreError();
  } else {
    if (work->ticket_open) fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    if (session) {
      if (session->qp == nullptr || session->id.empty()) {
        DropSession(std::move(session)).IgnoreError();
      } else {
        ReleaseSession(std::move(session));
      }
    }
  }
  if (!retry_over_http || work->cancelled()) {
    if (work->cancelled()) failure = Status::Cancelled(work->what + ": cancelled");
    Complete(work, std::move(failure));
    return;
  }
  Result<wire::WindowFence::Ticket> ticket =
      fence_.Begin(work->where.addr, options_.request_timeout);
  if (!ticket.ok()) {
    Complete(work, ticket.status().WithContext(work->what));
    return;
  }
  work->ticket = *ticket;
  work->ticket_open = true;
  FetchOverHttp(std::move(work));
}

void RcChannel::FetchOverHttp(std::shared_ptr<Work> work) {
  const RegisteredWindow& window = work->request.window;
  const std::span<std::byte> host = window.region->host_bytes();
  if (host.empty()) {
    fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    Complete(work, Status::Unimplemented(work->what +
                                         ": HTTP fallback into device memory is not supported"));
    return;
  }
  ControlGet get;
  get.bucket = work->request.bucket;
  get.key = work->request.key;
  get.offset = work->request.object_offset;
  get.length = window.length;
  get.if_match = work->request.if_match;
  get.destination = host.subspan(window.offset, window.length);
  get.cancel = work->request.cancel;
  control_->Get(std::move(get), [self = shared_from_this(), work](Result<ControlReply> reply) {
    // Only our own HTTP client wrote into the window, and it is done: no fence needed.
    self->fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    if (!reply.ok()) return self->Complete(work, reply.status().WithContext(work->what));
    if (!IsSuccess(reply->http_status)) {
      return self->Complete(work, ErrorFromReply(*reply, work->what));
    }
    {
      std::lock_guard lock(self->mutex_);
      ++self->counters_.http_requests;
      self->counters_.http_bytes += reply->body_bytes;
      if (work->rdma_tried) ++self->counters_.fallbacks;
    }
    self->Complete(work, FetchResult{.bytes = reply->body_bytes,
                                     .object_size = reply->object_size,
                                     .etag = reply->etag,
                                     .via = DataPath::kHttp});
  });
}

void RcChannel::ReleaseSession(std::shared_ptr<Session> session) {
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(session));
  }
  StartNextWaiting();
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
  {
    std::lock_guard lock(mutex_);
    --live_sessions_;
    if (session->qp) ++counters_.sessions_fenced;
  }
  // The QP is destroyed here, after the fence; the session object is ours alone by now.
  session.reset();
  StartNextWaiting();
  return fenced;
}

void RcChannel::Complete(const std::shared_ptr<Work>& work, Result<FetchResult> result) {
  if (!result.ok()) {
    std::lock_guard lock(mutex_);
    ++counters_.failed;
  }
  FetchCallback done = std::move(work->done);
  done(std::move(result));
}

}  // namespace reelfs::rdmaio::verbs

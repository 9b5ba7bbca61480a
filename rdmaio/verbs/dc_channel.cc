#include "rdmaio/verbs/dc_channel.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "rdmaio/verbs/channel_replies.h"
#include "rdmaio/wire/dc_token.h"
#include "rdmaio/wire/rdma_headers.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::verbs {
namespace {

constexpr std::string_view kLog = "rdma";
constexpr wire::RdmaOp kGet = wire::RdmaOp::kGet;

}  // namespace

struct DcChannel::Work {
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

std::shared_ptr<DcChannel> DcChannel::Create(std::shared_ptr<ControlPlane> control,
                                             std::shared_ptr<DcTargetProvider> targets,
                                             const Clock& clock, DcChannelOptions options) {
  return std::shared_ptr<DcChannel>(
      new DcChannel(std::move(control), std::move(targets), clock, std::move(options)));
}

DcChannel::DcChannel(std::shared_ptr<ControlPlane> control,
                     std::shared_ptr<DcTargetProvider> targets, const Clock& clock,
                     DcChannelOptions options)
    : control_(std::move(control)),
      targets_(std::move(targets)),
      options_(std::move(options)),
      policy_(clock, options_.policy),
      fence_(clock, {}),
      targets_in_use_(options_.max_targets, [] { return Target(); }) {
  counters_.endpoint = control_->endpoint();
  counters_.transport = "rdma-dc";
}

DcChannel::~DcChannel() = default;

ChannelCounters DcChannel::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

size_t DcChannel::live_targets() const { return targets_in_use_.live(); }

void DcChannel::Fetch(FetchRequest request, FetchCallback done) {
  const RegisteredWindow& window = request.window;
  if (!window.region || window.length == 0) {
    done(Status::InvalidArgument("DcChannel::Fetch: empty window"));
    return;
  }
  const uint64_t limit = std::min(options_.max_request_bytes, wire::kDcMaxWindowBytes);
  if (window.length > limit) {
    done(Status::InvalidArgument(
        fmt::format("DcChannel::Fetch: {} bytes is over the {}-byte limit", window.length, limit)));
    return;
  }
  Result<WindowAddress> where = targets_->Locate(window);
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
  Target target;
  if (!AcquireTarget(work, &target)) return;  // queued: a target's release starts it
  StartRdma(std::move(work), std::move(target));
}

bool DcChannel::AcquireTarget(const std::shared_ptr<Work>& work, Target* target) {
  return targets_in_use_.Acquire(work, target);
}

void DcChannel::StartNextWaiting() {
  std::shared_ptr<Work> work;
  Target target;
  if (targets_in_use_.Next(&work, &target)) StartRdma(std::move(work), std::move(target));
}

void DcChannel::Report(Work& work, wire::EndpointSignal signal) {
  if (work.reported || work.route == wire::Route::kHttp) return;
  work.reported = true;
  policy_.Report(control_->endpoint(), kGet, work.route, signal);
}

void DcChannel::StartRdma(std::shared_ptr<Work> work, Target target) {
  if (work->cancelled()) {
    Report(*work, wire::EndpointSignal::kNone);  // releases a probe
    Status cancelled = Status::Cancelled(work->what + ": cancelled");
    AbandonRdma(std::move(work), std::move(target), /*fence=*/false, /*retry=*/false,
                std::move(cancelled));
    return;
  }
  work->rdma_tried = true;
  if (target == nullptr) {
    Result<std::unique_ptr<DcTarget>> created = targets_->CreateTarget();
    if (!created.ok()) {
      // Our side's problem (QP limit, device gone), not the endpoint's.
      REELFS_LOG_WARN(kLog, "{}: no DC target: {}", work->what, created.status().ToString());
      Report(*work, wire::EndpointSignal::kNone);
      AbandonRdma(std::move(work), nullptr, false, true, created.status());
      return;
    }
    target = std::move(created).value();
    std::lock_guard lock(mutex_);
    ++counters_.sessions_opened;
  }
  const DcAddress& address = target->address();
  Result<wire::HeaderList> headers =
      wire::DcDataRequestHeaders(wire::DcToken{.addr = work->where.addr,
                                               .size = work->request.window.length,
                                               .rkey = work->where.rkey,
                                               .lid = address.lid,
                                               .dctn = address.dctn,
                                               .gid_present = address.gid_present,
                                               .gid = address.gid});
  if (!headers.ok()) {
    Report(*work, wire::EndpointSignal::kNone);
    AbandonRdma(std::move(work), std::move(target), false, true, headers.status());
    return;
  }
  ControlGet get;
  get.bucket = work->request.bucket;
  get.key = work->request.key;
  get.offset = work->request.object_offset;
  get.length = work->request.window.length;
  get.headers = std::move(*headers);
  get.if_match = work->request.if_match;
  // A server that declines or ignores the token answers with the bytes in the body: they go
  // straight into the window (only after a fence when the verdict asks for one, see OnDataReply).
  const std::span<std::byte> host = work->request.window.region->host_bytes();
  if (!host.empty()) get.destination = host.subspan(work->request.window.offset, get.length);
  get.cancel = work->request.cancel;
  control_->Get(std::move(get),
                [self = shared_from_this(), work, target](Result<ControlReply> reply) mutable {
                  self->OnDataReply(std::move(work), std::move(target), std::move(reply));
                });
}

void DcChannel::OnDataReply(std::shared_ptr<Work> work, Target target, Result<ControlReply> reply) {
  if (!reply.ok()) {
    const bool cancelled = reply.status().code() == StatusCode::kCancelled;
    const wire::ReplyVerdict verdict = wire::ClassifyNoResponse(cancelled);
    Report(*work, verdict.endpoint);
    AbandonRdma(std::move(work), std::move(target), verdict.fence_window,
                verdict.next == wire::NextStep::kRetryOverHttp, reply.status());
    return;
  }
  const wire::ReplyVerdict verdict =
      ClassifyDataGetReply(*reply, work->request.object_offset, work->request.window.length);
  Report(*work, verdict.endpoint);
  REELFS_LOG_DEBUG(kLog, "{} (DC): {} ({})", work->what, wire::ReplyKindName(verdict.kind),
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
      fence_.Finish(work->ticket, /*fence_needed=*/false);
      work->ticket_open = false;
      ReleaseTarget(std::move(target));
      Complete(work, std::move(result));
      return;
    }
    case wire::NextStep::kUseBody: {
      // The body is already in the window (the control plane put it there). A verdict that asks
      // for a fence fences the target before the caller may look at it.
      FetchResult result{.bytes = reply->body_bytes,
                         .object_size = reply->object_size,
                         .etag = reply->etag,
                         .via = DataPath::kHttp};
      if (verdict.fence_window) {
        work->ticket_open = false;
        fence_.Abandon(work->ticket);
        if (Status fenced = FenceWindow(*work, std::move(target)); !fenced.ok()) {
          Complete(work, fenced.WithContext(work->what + ": fencing the window"));
          return;
        }
      } else {
        fence_.Finish(work->ticket, false);
        work->ticket_open = false;
        ReleaseTarget(std::move(target));
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
      AbandonRdma(std::move(work), std::move(target), verdict.fence_window, true,
                  Status::Unavailable(verdict.reason));
      return;
    case wire::NextStep::kFail: {
      Status failure = ErrorFromReply(*reply, work->what);
      AbandonRdma(std::move(work), std::move(target), verdict.fence_window, false,
                  std::move(failure));
      return;
    }
  }
}

Status DcChannel::FenceWindow(Work& work, Target target) {
  Status fenced = target ? target->Fence() : Status::Ok();
  {
    std::lock_guard lock(mutex_);
    if (target) ++counters_.sessions_fenced;
  }
  if (!fenced.ok()) {
    REELFS_LOG_WARN(kLog, "{}: DC fence failed, window quarantined: {}", work.what,
                    fenced.ToString());
    target.reset();
    DropTarget();
    return fenced;
  }
  fence_.MarkFenced(work.where.addr).IgnoreError();
  if (target) {
    ReleaseTarget(std::move(target));
  } else {
    StartNextWaiting();
  }
  return Status::Ok();
}

void DcChannel::AbandonRdma(std::shared_ptr<Work> work, Target target, bool fence,
                            bool retry_over_http, Status failure) {
  REELFS_LOG_DEBUG(kLog, "{} (DC): RDMA attempt over ({}){}", work->what, failure.ToString(),
                   retry_over_http ? "; retrying over HTTP" : "");
  if (fence) {
    // Quarantine first, then kill the DCT the server would write through, then lift it.
    if (work->ticket_open) fence_.Abandon(work->ticket);
    work->ticket_open = false;
    if (Status fenced = FenceWindow(*work, std::move(target)); !fenced.ok()) {
      // The window stays quarantined: nobody may use it again (WindowFence refuses it).
      Complete(work, fenced.WithContext(work->what + ": fencing the window"));
      return;
    }
  } else {
    if (work->ticket_open) fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    if (target) {
      ReleaseTarget(std::move(target));
    } else {
      DropTarget();  // the reserved slot of a target never created
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

void DcChannel::FetchOverHttp(std::shared_ptr<Work> work) {
  Result<ControlGet> get = HttpFallbackGet(work->request, work->what);
  if (!get.ok()) {
    fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    return Complete(work, get.status());
  }
  control_->Get(std::move(get).value(),
                [self = shared_from_this(), work](Result<ControlReply> reply) {
                  // Only our own HTTP client wrote into the window, and it is done: no fence
                  // needed.
                  self->fence_.Finish(work->ticket, false);
                  work->ticket_open = false;
                  Result<FetchResult> result = HttpFallbackResult(reply, work->what);
                  if (!result.ok()) return self->Complete(work, result.status());
                  {
                    std::lock_guard lock(self->mutex_);
                    ++self->counters_.http_requests;
                    self->counters_.http_bytes += result->bytes;
                    if (work->rdma_tried) ++self->counters_.fallbacks;
                  }
                  self->Complete(work, std::move(result));
                });
}

void DcChannel::ReleaseTarget(Target target) {
  targets_in_use_.Release(std::move(target));
  StartNextWaiting();
}

void DcChannel::DropTarget() {
  targets_in_use_.Drop();
  StartNextWaiting();
}

void DcChannel::Complete(const std::shared_ptr<Work>& work, Result<FetchResult> result) {
  if (!result.ok()) {
    std::lock_guard lock(mutex_);
    ++counters_.failed;
  }
  FetchCallback done = std::move(work->done);
  done(std::move(result));
}

}  // namespace reelfs::rdmaio::verbs

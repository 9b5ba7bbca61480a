// ChannelBase's member definitions (channel_base.h). Included only by rc_channel.cc and
// dc_channel.cc, each of which instantiates ChannelBase explicitly for its own types once they are
// complete; nothing else sees these bodies.
#pragma once

#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "common/mutex.h"
#include "rdmaio/channel/channel_base.h"
#include "rdmaio/channel/channel_replies.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::channel {

template <typename Derived, typename Provider, typename Slot, typename Work>
ChannelBase<Derived, Provider, Slot, Work>::ChannelBase(std::shared_ptr<ControlPlane> control,
                                                        std::shared_ptr<Provider> provider,
                                                        const Clock& clock,
                                                        ChannelBaseOptions options,
                                                        std::function<Slot()> make_empty)
    : control_(std::move(control)),
      provider_(std::move(provider)),
      options_(std::move(options)),
      policy_(clock, options_.policy),
      fence_(clock, {}),
      slots_(options_.max_slots, std::move(make_empty)) {
  counters_.endpoint = control_->endpoint();
  counters_.transport = options_.transport;
}

template <typename Derived, typename Provider, typename Slot, typename Work>
ChannelCounters ChannelBase<Derived, Provider, Slot, Work>::counters() const {
  MutexLock lock(mutex_);
  return counters_;
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Fetch(FetchRequest request, FetchCallback done) {
  if (Status checked =
          CheckWindow(request.window, options_.max_fetch_bytes, options_.name + "::Fetch");
      !checked.ok()) {
    done(std::move(checked));
    return;
  }
  Result<WindowAddress> where = provider_->Locate(request.window);
  if (!where.ok()) {
    done(where.status());
    return;
  }
  auto work = std::make_shared<Work>();
  work->what = DescribeFetch(request);
  work->request = std::move(request);
  work->done = std::move(done);
  work->where = *where;
  if (Status admitted = Admit(*work); !admitted.ok()) {
    work->done(std::move(admitted));
    return;
  }
  const wire::Route route = policy_.Choose(control_->endpoint(), wire::RdmaOp::kGet);
  Route(std::move(work), route);
}

template <typename Derived, typename Provider, typename Slot, typename Work>
Status ChannelBase<Derived, Provider, Slot, Work>::Admit(Work& work) {
  Result<wire::WindowFence::Ticket> ticket =
      fence_.Begin(work.where.addr, options_.request_timeout);
  if (!ticket.ok()) return ticket.status().WithContext(work.what);
  work.ticket = *ticket;
  work.ticket_open = true;
  return Status::Ok();
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Route(std::shared_ptr<Work> work,
                                                       wire::Route route) {
  work->route = route;
  if (route == wire::Route::kHttp) {
    SendOverHttp(std::move(work));
    return;
  }
  Slot slot;
  if (!slots_.Acquire(work, &slot)) return;  // queued: a slot's release starts it
  StartRdma(std::move(work), std::move(slot));
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::StartNextWaiting() {
  std::shared_ptr<Work> work;
  Slot slot;
  if (slots_.Next(&work, &slot)) StartRdma(std::move(work), std::move(slot));
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::StartRdma(std::shared_ptr<Work> work, Slot slot) {
  if (work->cancelled()) {
    Report(*work, wire::EndpointSignal::kNone);  // releases a probe
    Status cancelled = Status::Cancelled(work->what + ": cancelled");
    AbandonRdma(std::move(work), std::move(slot), /*fence=*/false, /*retry_over_http=*/false,
                std::move(cancelled));
    return;
  }
  work->rdma_tried = true;
  SendRdma(std::move(work), std::move(slot));
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Report(Work& work, wire::EndpointSignal signal) {
  if (work.reported || work.route == wire::Route::kHttp) return;
  work.reported = true;
  OnSignal(signal);
  policy_.Report(control_->endpoint(), work.op, work.route, signal);
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::SendDataRequest(std::shared_ptr<Work> work,
                                                                 Slot slot,
                                                                 ControlHeaders headers) {
  ControlGet get;
  get.bucket = work->request.bucket;
  get.key = work->request.key;
  get.offset = work->request.object_offset;
  get.length = work->request.window.length;
  get.headers = std::move(headers);
  get.if_match = work->request.if_match;
  // A server that declines or ignores the token answers with the bytes in the body: they go
  // straight into the window (only after a fence when the verdict asks for one, see OnDataReply).
  const std::span<std::byte> host = work->request.window.region->host_bytes();
  if (!host.empty()) get.destination = host.subspan(work->request.window.offset, get.length);
  get.cancel = work->request.cancel;
  std::shared_ptr<ChannelBase> self = this->shared_from_this();
  control_->Get(std::move(get),
                [self = std::move(self), work, slot](Result<ControlReply> reply) mutable {
                  self->OnDataReply(std::move(work), std::move(slot), std::move(reply));
                });
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::OnDataReply(std::shared_ptr<Work> work, Slot slot,
                                                             Result<ControlReply> reply) {
  if (!reply.ok()) {
    const bool cancelled = reply.status().code() == StatusCode::kCancelled;
    const wire::ReplyVerdict verdict = wire::ClassifyNoResponse(cancelled);
    Report(*work, verdict.endpoint);
    AbandonRdma(std::move(work), std::move(slot), verdict.fence_window,
                verdict.next == wire::NextStep::kRetryOverHttp, reply.status());
    return;
  }
  const wire::ReplyVerdict verdict =
      ClassifyDataGetReply(*reply, work->request.object_offset, work->request.window.length);
  Report(*work, verdict.endpoint);
  REELFS_LOG_DEBUG("rdma", "{}{}: {} ({})", work->what, options_.log_tag,
                   wire::ReplyKindName(verdict.kind), verdict.reason);
  switch (verdict.next) {
    case wire::NextStep::kDone:
      OnRdmaDone(std::move(work), std::move(slot),
                 FetchResult{.bytes = verdict.bytes_transferred,
                             .object_size = reply->object_size,
                             .etag = reply->etag,
                             .via = DataPath::kRdma});
      return;
    case wire::NextStep::kUseBody: {
      // The body is already in the window (the control plane put it there). A verdict that asks
      // for a fence fences the slot before the caller may look at it.
      FetchResult result{.bytes = reply->body_bytes,
                         .object_size = reply->object_size,
                         .etag = reply->etag,
                         .via = DataPath::kHttp};
      if (verdict.fence_window) {
        work->ticket_open = false;
        fence_.Abandon(work->ticket);
        if (Status fenced = FenceWindow(*work, std::move(slot)); !fenced.ok()) {
          Fail(work, fenced.WithContext(work->what + ": fencing the window"));
          return;
        }
      } else {
        fence_.Finish(work->ticket, /*fence_needed=*/false);
        work->ticket_open = false;
        Release(std::move(slot));
      }
      Count([&result](ChannelCounters& counters) {
        ++counters.http_requests;
        ++counters.fallbacks;
        counters.http_bytes += result.bytes;
      });
      Complete(work, std::move(result));
      return;
    }
    case wire::NextStep::kRetryOverHttp:
      AbandonRdma(std::move(work), std::move(slot), verdict.fence_window, true,
                  Status::Unavailable(verdict.reason));
      return;
    case wire::NextStep::kFail: {
      Status failure = ErrorFromReply(*reply, work->what);
      AbandonRdma(std::move(work), std::move(slot), verdict.fence_window, false,
                  std::move(failure));
      return;
    }
  }
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::AbandonRdma(std::shared_ptr<Work> work, Slot slot,
                                                             bool fence, bool retry_over_http,
                                                             Status failure) {
  REELFS_LOG_DEBUG("rdma", "{}{}: RDMA attempt over ({}){}", work->what, options_.log_tag,
                   failure.ToString(), retry_over_http ? "; retrying over HTTP" : "");
  if (fence) {
    // Quarantine first, then kill what the server would write through, then lift it.
    if (work->ticket_open) fence_.Abandon(work->ticket);
    work->ticket_open = false;
    if (Status fenced = FenceWindow(*work, std::move(slot)); !fenced.ok()) {
      // The window stays quarantined: nobody may use it again (WindowFence refuses it).
      Fail(work, fenced.WithContext(work->what + ": fencing the window"));
      return;
    }
  } else {
    if (work->ticket_open) fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    GiveBack(std::move(slot));
  }
  if (!retry_over_http || work->cancelled()) {
    if (work->cancelled()) failure = Status::Cancelled(work->what + ": cancelled");
    Fail(work, std::move(failure));
    return;
  }
  if (Status admitted = Admit(*work); !admitted.ok()) {
    Fail(work, std::move(admitted));
    return;
  }
  SendOverHttp(std::move(work));
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::FetchOverHttp(std::shared_ptr<Work> work) {
  Result<ControlGet> get = HttpFallbackGet(work->request, work->what);
  if (!get.ok()) {
    fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    return Fail(work, get.status());
  }
  std::shared_ptr<ChannelBase> self = this->shared_from_this();
  control_->Get(std::move(get).value(), [self = std::move(self), work](Result<ControlReply> reply) {
    // Only our own HTTP client wrote into the window, and it is done: no fence needed.
    self->fence_.Finish(work->ticket, false);
    work->ticket_open = false;
    Result<FetchResult> result = HttpFallbackResult(reply, work->what);
    if (!result.ok()) return self->Fail(work, result.status());
    self->Count([&](ChannelCounters& counters) {
      ++counters.http_requests;
      counters.http_bytes += result->bytes;
      if (work->rdma_tried) ++counters.fallbacks;
    });
    self->Complete(work, std::move(result));
  });
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Release(Slot slot) {
  slots_.Release(std::move(slot));
  StartNextWaiting();
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Drop() {
  slots_.Drop();
  StartNextWaiting();
}

template <typename Derived, typename Provider, typename Slot, typename Work>
void ChannelBase<Derived, Provider, Slot, Work>::Complete(const std::shared_ptr<Work>& work,
                                                          Result<FetchResult> result) {
  if (!result.ok()) Count([](ChannelCounters& counters) { ++counters.failed; });
  FetchCallback done = std::move(work->done);
  done(std::move(result));
}

}  // namespace reelfs::rdmaio::channel

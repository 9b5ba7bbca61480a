#include "rdmaio/channel/dc_channel.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "rdmaio/channel/channel_base_impl.h"
#include "rdmaio/wire/dc_token.h"
#include "rdmaio/wire/rdma_headers.h"

namespace reelfs::rdmaio::channel {

// The whole shared state machine, for DC's types (channel_base_impl.h).
template class ChannelBase<DcChannel, DcTargetProvider, DcSlot, ChannelWork>;

namespace {

constexpr std::string_view kLog = "rdma";

}  // namespace

std::shared_ptr<DcChannel> DcChannel::Create(std::shared_ptr<ControlPlane> control,
                                             std::shared_ptr<DcTargetProvider> targets,
                                             const Clock& clock, DcChannelOptions options) {
  return std::shared_ptr<DcChannel>(
      new DcChannel(std::move(control), std::move(targets), clock, std::move(options)));
}

DcChannel::DcChannel(std::shared_ptr<ControlPlane> control,
                     std::shared_ptr<DcTargetProvider> targets, const Clock& clock,
                     DcChannelOptions options)
    : DcChannelBase(
          std::move(control), std::move(targets), clock,
          ChannelBaseOptions{
              .name = "DcChannel",
              .transport = "rdma-dc",
              .log_tag = " (DC)",
              .max_slots = options.max_targets,
              .max_fetch_bytes = std::min(options.max_request_bytes, wire::kDcMaxWindowBytes),
              .request_timeout = options.request_timeout,
              .policy = std::move(options.policy),
          },
          [] { return Target(); }) {}

DcChannel::~DcChannel() = default;

void DcChannel::SendRdma(std::shared_ptr<Work> work, Target target) {
  if (target == nullptr) {
    Result<std::unique_ptr<DcTarget>> created = provider_->CreateTarget();
    if (!created.ok()) {
      // Our side's problem (QP limit, device gone), not the endpoint's.
      REELFS_LOG_WARN(kLog, "{}: no DC target: {}", work->what, created.status().ToString());
      Report(*work, wire::EndpointSignal::kNone);
      AbandonRdma(std::move(work), nullptr, false, true, created.status());
      return;
    }
    target = std::move(created).value();
    Count([](ChannelCounters& counters) { ++counters.sessions_opened; });
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
  SendDataRequest(std::move(work), std::move(target), std::move(*headers));
}

void DcChannel::OnRdmaDone(std::shared_ptr<Work> work, Target target, FetchResult result) {
  Count([&result](ChannelCounters& counters) {
    ++counters.rdma_requests;
    counters.rdma_bytes += result.bytes;
  });
  fence_.Finish(work->ticket, /*fence_needed=*/false);
  work->ticket_open = false;
  Release(std::move(target));
  Complete(work, std::move(result));
}

Status DcChannel::FenceWindow(Work& work, Target target) {
  Status fenced = target ? target->Fence() : Status::Ok();
  if (target) Count([](ChannelCounters& counters) { ++counters.sessions_fenced; });
  if (!fenced.ok()) {
    REELFS_LOG_WARN(kLog, "{}: DC fence failed, window quarantined: {}", work.what,
                    fenced.ToString());
    target.reset();
    Drop();
    return fenced;
  }
  fence_.MarkFenced(work.where.addr).IgnoreError();
  if (target) {
    Release(std::move(target));
  } else {
    StartNextWaiting();
  }
  return Status::Ok();
}

void DcChannel::GiveBack(Target target) {
  if (target) {
    Release(std::move(target));
  } else {
    Drop();  // the reserved slot of a target never created
  }
}

}  // namespace reelfs::rdmaio::channel

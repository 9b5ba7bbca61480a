// DcChannel: the cuObject DC v1 DataChannel (docs/protocols/rdma-dc.md).
//
// One channel talks to one S3 endpoint through a ControlPlane and lets the server write into our
// windows through DC targets from a DcTargetProvider (mlx5dv DCTs, or fakes in unit tests). For
// each Fetch:
//
//   1. The endpoint policy (wire/endpoint_policy.h) picks RDMA or HTTP for GETs to the endpoint.
//   2. RDMA takes an idle target (up to `max_targets`; a fetch waits for one when all are busy;
//      a target serves one request at a time so that fencing it touches no other request), mints
//      the 81-character token (wire/dc_token.h: addr = the window's address, size = its length,
//      rkey, lid, the target's DCTN and GID) and sends the ranged GET through ControlPlane::Get
//      with x-amz-rdma-token and x-amz-content-sha256: UNSIGNED-PAYLOAD. No handshake: the
//      server's DC initiator writes the window, then answers with an empty body and
//      x-amz-rdma-reply; the HTTP answer is the completion.
//   3. The reply classifier (wire/reply_classifier.h) decides: done, use the body, retry over
//      HTTP, or fail; its endpoint signal feeds the policy (per endpoint fallback to HTTP).
//   4. After any failure, timeout or cancellation, and whenever the verdict asks for a fence, the
//      target is fenced (its DCT destroyed and recreated: new DCTN, dc_target.h) *before* anything
//      else is written into the window and before `done` runs; WindowFence keeps the books, so a
//      window still in flight or quarantined is refused (kFailedPrecondition + kWindowBusy /
//      kWindowQuarantined).
//
// Counters as RcChannel's (rdmaio/channel_counters.h), transport "rdma-dc": sessions_opened
// counts targets created, sessions_fenced targets fenced.
//
// The fetch state machine (admission, queueing, cancellation, fallback, fence before `done`,
// counters) is ChannelBase's (channel_base.h); this class is what is DC about it: a target per
// request, the token, the fence by DCT recreation.
//
// Requests in flight hold the channel (shared_from_this), so it lives until the last `done`.
// Thread-safety: Fetch, registrar and counters may be called from any thread. Callbacks run on
// the control plane's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/clock.h"
#include "rdmaio/channel/channel_base.h"
#include "rdmaio/channel/dc_target.h"
#include "rdmaio/channel_counters.h"
#include "rdmaio/control_plane.h"
#include "rdmaio/wire/endpoint_policy.h"

namespace reelfs::rdmaio::channel {

struct DcChannelOptions {
  // DC targets (DCTs) kept; one request uses one at a time. Default: 4 (vgwrdma's default
  // staging pool serves 4 transfers at once).
  size_t max_targets = 4;
  // The longest single fetch: vgwrdma and cuObjServer take <= 1 GiB (the token could say 4 GiB
  // - 1). Default 1 GiB.
  uint64_t max_request_bytes = 1ull << 30;
  // Bookkeeping deadline of a window in flight (the control plane's timeouts end requests).
  Clock::Duration request_timeout = std::chrono::minutes(10);
  wire::EndpointPolicyOptions policy;
};

class DcChannel;
// Shared only so callbacks (std::function) can carry it; one request owns it at a time. Null: a
// slot reserved, the DCT not yet created.
using DcSlot = std::shared_ptr<DcTarget>;
using DcChannelBase = ChannelBase<DcChannel, DcTargetProvider, DcSlot, ChannelWork>;

class DcChannel final : public DcChannelBase {
 public:
  static std::shared_ptr<DcChannel> Create(std::shared_ptr<ControlPlane> control,
                                           std::shared_ptr<DcTargetProvider> targets,
                                           const Clock& clock, DcChannelOptions options = {});
  ~DcChannel() override;

  // Fetch, registrar, counters, policy, fence: ChannelBase's.
  // Targets alive now (idle or busy).
  size_t live_targets() const { return live_slots(); }

 private:
  using Work = ChannelWork;
  using Target = DcSlot;

  DcChannel(std::shared_ptr<ControlPlane> control, std::shared_ptr<DcTargetProvider> targets,
            const Clock& clock, DcChannelOptions options);

  // Creates the target when the slot is new, mints the token and sends the data GET.
  void SendRdma(std::shared_ptr<Work> work, Target target) override;
  void OnRdmaDone(std::shared_ptr<Work> work, Target target, FetchResult result) override;
  // Fences the window's target (DCT recreated) and lifts the quarantine; non-OK when the fence
  // failed (the window then stays quarantined and the target is dropped).
  Status FenceWindow(Work& work, Target target) override;
  void GiveBack(Target target) override;
  void SendOverHttp(std::shared_ptr<Work> work) override { FetchOverHttp(std::move(work)); }
  void Fail(const std::shared_ptr<Work>& work, Status failure) override {
    Complete(work, std::move(failure));
  }
};

}  // namespace reelfs::rdmaio::channel

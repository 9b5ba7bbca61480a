// ChannelBase: the fetch state machine both RDMA DataChannels run (RcChannel: hipobj-rc-v2
// sessions; DcChannel: cuObject DC targets), written once. What it owns:
//
//   * admission: the window checked (non-empty, under the channel's limit) and located, its
//     WindowFence ticket taken (a window in flight or quarantined is refused), the route chosen by
//     the endpoint policy;
//   * the queue: an RDMA request takes a slot of the SlotPool (an RC session, a DC target) or waits
//     for one; a slot given back starts the longest-waiting request;
//   * cancellation before the RDMA request is sent, and the verdict reported to the policy once;
//   * the data GET whose answer is the completion (the token in its headers), and the reply
//     classifier's verdict on that answer (done, use the body, retry over HTTP, fail);
//   * the fence before `done`: after a failure, timeout or cancellation, or when the verdict asks
//     for it, the window is quarantined, the slot fenced, and only then is the window reused (HTTP
//     retry) or handed back (`done`); a failed fence leaves the window quarantined for good;
//   * the HTTP fallback GET, and the counters.
//
// What differs is behind the hooks below: how a slot starts the RDMA request (RC: PREPARE +
// READY, or a session GET / PUT; DC: a new target and a token), how a slot is fenced (RC: the QP
// to ERR and dropped; DC: the DCT recreated and the target reused), whether a slot that needs no
// fence can be reused, and (RC's Put) what the HTTP fallback and the completion of a request are.
//
// The member definitions are in channel_base_impl.h, included by rc_channel.cc and dc_channel.cc
// only, which instantiate the template explicitly: their work and slot types are complete there.
//
// Thread-safety: as DataChannel: Fetch, registrar, counters, policy and fence may be called from
// any thread; the rest runs on the caller's thread or the control plane's. One request owns its
// work and its slot at a time. `mutex_` is a leaf: nothing is called out while it is held.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "rdmaio/channel/rc_session_qp.h"
#include "rdmaio/channel/slot_pool.h"
#include "rdmaio/channel_counters.h"
#include "rdmaio/control_plane.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/wire/endpoint_policy.h"
#include "rdmaio/wire/window_fence.h"

namespace reelfs::rdmaio::channel {

// One request in a channel, from admission to `done`.
struct ChannelWork {
  FetchRequest request;
  FetchCallback done;
  wire::RdmaOp op = wire::RdmaOp::kGet;
  WindowAddress where;
  wire::WindowFence::Ticket ticket;
  bool ticket_open = false;
  wire::Route route = wire::Route::kHttp;
  bool reported = false;  // the policy has this request's verdict
  bool rdma_tried = false;
  std::string what;  // "GET bucket/key [offset, +length)"

  bool cancelled() const { return request.cancel && request.cancel->cancelled(); }
};

struct ChannelBaseOptions {
  std::string name;       // "RcChannel": prefixes admission errors ("RcChannel::Fetch: ...")
  std::string transport;  // ChannelCounters::transport: "rdma-rc", "rdma-dc"
  std::string log_tag;    // after `what` in debug logs: "" or " (DC)"
  size_t max_slots = 4;
  uint64_t max_fetch_bytes = 1ull << 30;
  Clock::Duration request_timeout = std::chrono::minutes(10);
  wire::EndpointPolicyOptions policy;
};

// A request's window: kInvalidArgument when empty or over `limit` bytes ("WHO: ...").
Status CheckWindow(const RegisteredWindow& window, uint64_t limit, std::string_view who);
// "GET bucket/key [offset, +length)"
std::string DescribeFetch(const FetchRequest& request);

// Derived: the channel (enable_shared_from_this: requests in flight hold it). Provider: where
// slots come from and windows are located (Locate, registrar). Slot: what one RDMA request holds
// (a shared_ptr; the pool may hand out an empty one the request sets up). Work: ChannelWork or a
// struct derived from it.
template <typename Derived, typename Provider, typename Slot, typename Work>
class ChannelBase : public DataChannel, public std::enable_shared_from_this<Derived> {
 public:
  ~ChannelBase() override = default;

  void Fetch(FetchRequest request, FetchCallback done) override;
  MemoryRegistrar& registrar() override { return provider_->registrar(); }

  ChannelCounters counters() const;
  const wire::EndpointPolicy& policy() const { return policy_; }
  const wire::WindowFence& fence() const { return fence_; }

 protected:
  ChannelBase(std::shared_ptr<ControlPlane> control, std::shared_ptr<Provider> provider,
              const Clock& clock, ChannelBaseOptions options, std::function<Slot()> make_empty);

  // Takes the window's fence ticket; the error (with the request's context) when it is refused.
  Status Admit(Work& work);
  // Sends an admitted request over HTTP, or RDMA on a slot (queued when all are busy).
  void Route(std::shared_ptr<Work> work, wire::Route route);
  // Reports the request's verdict to the endpoint policy (once per request).
  void Report(Work& work, wire::EndpointSignal signal);
  // The ranged GET carrying `headers` (the token) into the window; its answer goes to the
  // classifier (OnDataReply).
  void SendDataRequest(std::shared_ptr<Work> work, Slot slot, ControlHeaders headers);
  // The RDMA attempt is over without the bytes: fence if asked (a failed fence fails the
  // request), give the slot back, then retry over HTTP (or fail / cancel).
  void AbandonRdma(std::shared_ptr<Work> work, Slot slot, bool fence, bool retry_over_http,
                   Status failure);
  void FetchOverHttp(std::shared_ptr<Work> work);
  // A healthy slot back to the pool / a slot (or reserved room) that will not come back; either
  // way the longest-waiting request starts.
  void Release(Slot slot);
  void Drop();
  // Starts the longest-waiting request when a slot is free.
  void StartNextWaiting();
  void Complete(const std::shared_ptr<Work>& work, Result<FetchResult> result);
  template <typename Update>
  void Count(Update&& update) {
    MutexLock lock(mutex_);
    update(counters_);
  }
  size_t live_slots() const { return slots_.live(); }

  // ---- hooks: what differs between the transports ----
  // Starts the RDMA request on `slot` (not cancelled; rdma_tried is set).
  virtual void SendRdma(std::shared_ptr<Work> work, Slot slot) = 0;
  // The data GET's answer says the bytes came over RDMA: bookkeeping, slot back, `done`.
  virtual void OnRdmaDone(std::shared_ptr<Work> work, Slot slot, FetchResult result) = 0;
  // The window's ticket is abandoned (quarantined): fences `slot` so nothing the server still has
  // in flight can land, gives it back (or drops it) and lifts the quarantine (MarkFenced). Non-OK
  // when the fence failed: the window then stays quarantined.
  virtual Status FenceWindow(Work& work, Slot slot) = 0;
  // An attempt that needs no fence is over: the slot back to the pool, or dropped when it was
  // never set up (its room then frees).
  virtual void GiveBack(Slot slot) = 0;
  // The HTTP path of the request (a fetch: FetchOverHttp).
  virtual void SendOverHttp(std::shared_ptr<Work> work) = 0;
  // An error, to whichever callback the request has (a fetch: Complete).
  virtual void Fail(const std::shared_ptr<Work>& work, Status failure) = 0;
  // Sees each verdict before the policy does (RC: an ignored token unconfirms its extension).
  virtual void OnSignal(wire::EndpointSignal /*signal*/) {}

  // Members in teardown order (reverse): slots (QPs, DCTs) go before their provider. Protected:
  // the derived channel is the other half of the same state machine.
  const std::shared_ptr<ControlPlane> control_;
  const std::shared_ptr<Provider> provider_;
  const ChannelBaseOptions options_;
  wire::EndpointPolicy policy_;
  wire::WindowFence fence_;

 private:
  void StartRdma(std::shared_ptr<Work> work, Slot slot);
  void OnDataReply(std::shared_ptr<Work> work, Slot slot, Result<ControlReply> reply);

  SlotPool<Slot, std::shared_ptr<Work>> slots_;
  mutable Mutex mutex_;  // leaf: no call out while held
  ChannelCounters counters_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::rdmaio::channel

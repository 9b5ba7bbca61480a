// RcChannel: the hipobj-rc-v2 DataChannel (docs/protocols/rdma.md §2.3, §6).
//
// One channel talks to one S3 endpoint through a ControlPlane (signed S3 requests; rdmaio never
// sees libcurl) and moves bytes over RC queue pairs from an RcQpProvider (real verbs, or fakes in
// unit tests). For each Fetch:
//
//   1. The endpoint policy (wire/endpoint_policy.h) picks RDMA or HTTP for GETs to the endpoint.
//   2. RDMA takes an idle session of the endpoint (up to `max_sessions` QPs per gateway, reused
//      across requests; a fetch waits for one when all are busy). A new session is set up by the
//      hipobj-rc-v2 flow: PREPARE with this request (client token, psn, cookie) -> the server's
//      token, session, psn, qpn -> our QP brought up by hand -> READY, which runs this request's
//      transfer. Later requests on the session are ranged GETs carrying the RC token of their
//      window plus x-amz-rdma-session and a fresh cookie (our extension, §6: one HTTP exchange per
//      request once a session exists); the server writes the window, then answers with an empty
//      body and x-amz-rdma-reply.
//   3. The reply classifier (wire/reply_classifier.h) decides: done, use the HTTP body, retry
//      over HTTP, or fail; its endpoint signal feeds the policy.
//   4. After any failure, timeout or cancellation, and whenever the verdict asks for a fence, the
//      session's QP is moved to ERR and dropped (the fence: nothing the server still has in flight
//      for that request can land afterwards) *before* anything else is written into the window
//      and before `done` runs. WindowFence keeps the bookkeeping: a window still in flight or
//      quarantined is refused (kFailedPrecondition + kWindowBusy / kWindowQuarantined) rather
//      than shared.
//
// Put uploads a registered window as an object or as one part (docs/protocols/rdma-put.md): the
// server RDMA-READs the payload out of the window. The hazard it must avoid is a server that does
// not speak the protocol storing a body-less PUT as a 0-byte object, so:
//   * Until the endpoint has answered a session request correctly (a session GET or a session
//     PUT: "the session extension is confirmed"), every PUT sets up its own session with
//     PREPARE (op PUT) + READY. A server without hipobj-rc-v2 refuses PREPARE and stores nothing;
//     the refusal declines RDMA for that op on the endpoint, and the PUT goes over HTTP with the
//     window's bytes as the body. An idle session taken from the pool is closed and reopened.
//   * Afterwards PUTs run on an idle session: one empty-bodied PUT carrying the window's token,
//     x-amz-rdma-session, a fresh cookie and x-amz-rdma-size; the answer is checked (reply 200,
//     bytes == size, our cookie, an ETag). An answer without the reply header means the token
//     was ignored: the endpoint loses RDMA writes and the PUT is re-sent over HTTP, which
//     overwrites whatever was stored.
//   * Failures, timeouts and cancellation fence the session exactly as for a fetch: the server
//     must not go on reading a window the caller may refill once `done` has run.
//
// Bytes are counted per path: RDMA (the server wrote or read the window) and HTTP (bodies,
// whether the policy chose HTTP or a reply fell back to it), for fetches and puts separately.
//
// The fetch state machine (admission, queueing, cancellation, fallback, fence before `done`,
// counters) is ChannelBase's (channel_base.h), shared with DcChannel; this class is what is RC
// about it: sessions set up by PREPARE / READY, session GETs and PUTs, the fence by QP to ERR, and
// Put.
//
// Timeouts are the control plane's (its HTTP timeouts end a request whose server never answers:
// the HTTP answer is the completion). Requests in flight hold the channel (shared_from_this), so
// it lives until the last `done` has run.
//
// Thread-safety: Fetch, Put, registrar and counters may be called from any thread. Callbacks run on
// the control plane's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "rdmaio/channel/channel_base.h"
#include "rdmaio/channel/rc_session_qp.h"
#include "rdmaio/channel_counters.h"
#include "rdmaio/control_plane.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/wire/endpoint_policy.h"

namespace reelfs::rdmaio::channel {

struct RcChannelOptions {
  // RC sessions (QP pairs) kept per gateway. Default: 4.
  size_t max_sessions = 4;
  // The longest single fetch (vgwrdma takes <= 1 GiB; callers split larger reads). Default 1 GiB.
  uint64_t max_request_bytes = 1ull << 30;
  // Bookkeeping deadline of a window in flight (the control plane's timeouts end requests).
  Clock::Duration request_timeout = std::chrono::minutes(10);
  wire::EndpointPolicyOptions policy;
};

using RcChannelCounters = ChannelCounters;  // transport "rdma-rc"

// The put types are the DataChannel's (rdmaio/data_channel.h); named here too for callers that
// spell them rdmaio::channel::.
using rdmaio::kMaxPutBytes;
using rdmaio::PutCallback;
using rdmaio::PutRequest;
using rdmaio::PutResult;

class RcChannel;
struct RcSession;  // rc_channel.cc: one QP and its server session
struct RcWork;     // rc_channel.cc: a ChannelWork, plus a put's request and callback
using RcChannelBase = ChannelBase<RcChannel, RcQpProvider, std::shared_ptr<RcSession>, RcWork>;

class RcChannel final : public RcChannelBase {
 public:
  static std::shared_ptr<RcChannel> Create(std::shared_ptr<ControlPlane> control,
                                           std::shared_ptr<RcQpProvider> qps, const Clock& clock,
                                           RcChannelOptions options = {});
  ~RcChannel() override;

  // Fetch, registrar, counters, policy, fence: ChannelBase's.
  // Uploads the window (see above). `done` runs exactly once; the window may be reused after it.
  void Put(PutRequest request, PutCallback done) override;

  // Sessions alive now (idle or busy).
  size_t live_sessions() const { return live_slots(); }
  // Whether the endpoint answered a session GET or session PUT correctly (session PUTs allowed).
  bool session_extension_confirmed() const;

 private:
  using Session = RcSession;
  using Work = RcWork;

  RcChannel(std::shared_ptr<ControlPlane> control, std::shared_ptr<RcQpProvider> qps,
            const Clock& clock, RcChannelOptions options);

  // Opens a session (PREPARE + READY) when the slot has none, else a session PUT or GET; a PUT
  // reopens an idle session while session PUTs are not safe.
  void SendRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session) override;
  void OpenSession(std::shared_ptr<Work> work, std::shared_ptr<Session> session);
  void SendReady(std::shared_ptr<Work> work, std::shared_ptr<Session> session);
  // A session GET's or PUT's common start: a fresh cookie, completions reaped (receives topped up
  // for a GET), the RC token of the work's window; the token, session and cookie headers.
  Result<ControlHeaders> BeginSessionRequest(Work& work, Session& session, bool post_receives);
  void SendDataGet(std::shared_ptr<Work> work, std::shared_ptr<Session> session);
  void SendSessionPut(std::shared_ptr<Work> work, std::shared_ptr<Session> session);
  void OnReadyReply(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                    const ControlReply& reply);
  void OnPutReply(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                  Result<ControlReply> reply);
  // Closes an idle session's QP and server session but keeps its slot, for a PREPARE.
  void ResetSession(Session& session);
  void PutOverHttp(std::shared_ptr<Work> work);
  // A session GET answered "done": the session extension is confirmed, then FinishRdma.
  void OnRdmaDone(std::shared_ptr<Work> work, std::shared_ptr<Session> session,
                  FetchResult result) override;
  // The request's RDMA transfer is done: bookkeeping, session back to the pool, `done`.
  void FinishRdma(std::shared_ptr<Work> work, std::shared_ptr<Session> session, bool opened,
                  uint64_t bytes, uint64_t object_size, std::string etag);

  // A PREPARE or READY that got no answer or a non-2xx one: reports it, abandons RDMA for this
  // fetch (session fenced, HTTP retry unless cancelled) and returns true; false when it succeeded.
  bool AbandonIfControlFailed(std::shared_ptr<Work>& work, std::shared_ptr<Session>& session,
                              const Result<ControlReply>& reply, const char* step);
  // An ignored token unconfirms the session extension: session PUTs wait for a new confirmation.
  void OnSignal(wire::EndpointSignal signal) override;
  // Drops the session (the QP to ERR first) and lifts the window's quarantine.
  Status FenceWindow(Work& work, std::shared_ptr<Session> session) override;
  // Back to the pool when the session is up, else dropped.
  void GiveBack(std::shared_ptr<Session> session) override;
  // Fences and drops a session (CANCEL sent best-effort); frees its slot. Non-OK when the QP
  // could not be moved to ERR: the window must then stay quarantined.
  Status DropSession(std::shared_ptr<Session> session);
  void SendOverHttp(std::shared_ptr<Work> work) override;
  using RcChannelBase::Complete;
  void Complete(const std::shared_ptr<Work>& work, Result<PutResult> result);
  // An error, to whichever callback the request has.
  void Fail(const std::shared_ptr<Work>& work, Status failure) override;
  uint64_t NewCookie();

  mutable Mutex mutex_;  // leaf: no call out while held; ChannelBase's is another leaf
  bool session_extension_ GUARDED_BY(mutex_) = false;
  std::mt19937_64 random_ GUARDED_BY(mutex_);
};

}  // namespace reelfs::rdmaio::channel

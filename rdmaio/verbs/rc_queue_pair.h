// RcQueuePair: an RC queue pair brought up by hand from the peer's endpoint (QP number, packet
// sequence number, GID), without rdma_cm.
//
// This is how hipobj-rc-v2 connects (docs/protocols/rdma.md §2.3): the client's endpoint travels
// in the PREPARE request's RC token and x-amz-rdma-psn, the server's comes back in the reply, and
// each side moves its own QP INIT -> RTR -> RTS. The HTTP exchange replaces rdma_cm's handshake,
// so the QP lives on a device context we open ourselves (ProtectionDomain::Open).
//
// RoCE addressing: the local GID is the port's first RoCE v2 entry holding an IPv4-mapped address
// (what rdma_cm picks for an IPv4 peer), else the first RoCE v2 entry, else index 0 (InfiniBand).
//
// Thread-safety: one thread at a time (posting and polling share the CQ).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "common/result.h"
#include "rdmaio/channel/rc_session_qp.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/handles.h"
#include "rdmaio/verbs/queue.h"

namespace reelfs::rdmaio::verbs {

// The endpoint type is the channel's (the session seam speaks it); verbs brings QPs up from it.
using channel::RcEndpoint;

class RcQueuePair {
 public:
  // A QP in INIT on `pd`'s device, port `port`, with a random initial PSN.
  [[nodiscard]] static Result<std::unique_ptr<RcQueuePair>> Create(
      std::shared_ptr<ProtectionDomain> pd, uint8_t port, const RcOptions& options = {});

  // This side's endpoint, to send to the peer.
  const RcEndpoint& local() const { return local_; }

  // INIT -> RTR (towards `remote`) -> RTS. kInvalidArgument for a qpn or psn wider than 24 bits;
  // the verbs errno otherwise (EINVAL from the driver usually means an unreachable GID).
  Status Connect(const RcEndpoint& remote);

  Status PostWrite(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
  Status PostWriteWithImm(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint32_t imm,
                          uint64_t wr_id);
  Status PostRead(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
  Status PostRecv(uint64_t wr_id);
  Result<ibv_wc> WaitCompletion(Timeout timeout);
  Result<ibv_qp_state> QueryState() const;
  // Moves the QP to ERR: outstanding work is flushed and the peer's further packets to it are
  // dropped, so nothing more lands in memory through this QP (the channel's window fence).
  Status MoveToError();

 private:
  RcQueuePair() = default;

  // Acquisition order; destroyed in reverse: QP, CQ (and its channel), PD.
  std::shared_ptr<ProtectionDomain> pd_;
  std::optional<CompletionQueue> cq_;
  QpHandle qp_;
  RcEndpoint local_;
  int gid_index_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
};

}  // namespace reelfs::rdmaio::verbs

// Completion queues and one-sided work requests, shared by every RC queue pair flavour
// (RcConnection through rdma_cm, RcQueuePair brought up by hand from a peer's token).
//
// Every wait has a deadline: completions are read from a non-blocking completion channel with
// poll(2), so a peer that never answers or a QP in error becomes a Status, never a hang.
//
// Thread-safety: a CompletionQueue is polled by one thread at a time. The Post* functions may be
// called concurrently on one QP (verbs serialises posts per QP).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include <infiniband/verbs.h>

#include "common/result.h"
#include "rdmaio/verbs/handles.h"

namespace reelfs::rdmaio::verbs {

using Timeout = std::chrono::milliseconds;

struct RcOptions {
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 16;
  uint32_t cq_entries = 128;  // max_send_wr + max_recv_wr, rounded up
};

// A local buffer for a work request: bytes inside a region registered on the QP's PD.
struct LocalSlice {
  std::span<std::byte> bytes;
  uint32_t lkey = 0;
};

class CompletionQueue {
 public:
  [[nodiscard]] static Result<CompletionQueue> Create(ibv_context* context, uint32_t entries);

  // The next completion, successful or not (check wc.status, or use WcToStatus).
  // kDeadlineExceeded when none arrives in time.
  Result<ibv_wc> Wait(Timeout timeout);

  ibv_cq* cq() const { return cq_.get(); }

 private:
  CompletionQueue() = default;
  CompChannelHandle channel_;  // destroyed after the CQ that reports to it
  CqHandle cq_;
};

// One-sided operations; every send is signalled (the QPs here set sq_sig_all). The immediate
// of a WRITE_WITH_IMM is given in host order and consumes a receive posted by the peer.
Status PostWrite(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
Status PostWriteWithImm(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                        uint32_t imm, uint64_t wr_id);
Status PostRead(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
// A zero-length receive: enough for WRITE_WITH_IMM, which carries no payload into it.
Status PostRecv(ibv_qp* qp, uint64_t wr_id);

// IBV_QPS_RTS when healthy, IBV_QPS_ERR after a failed operation.
Result<ibv_qp_state> QueryQpState(ibv_qp* qp);

}  // namespace reelfs::rdmaio::verbs

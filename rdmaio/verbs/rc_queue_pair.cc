#include "rdmaio/verbs/rc_queue_pair.h"

#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace {

constexpr uint32_t k24Bits = 0xffffff;
// Outstanding RDMA READs per direction; the peer reads PUT data from us.
constexpr uint8_t kRdAtomic = 4;
// Transport timeout 4.096 us * 2^14 = 67 ms, 7 retries: a dead peer surfaces in about half a
// second as IBV_WC_RETRY_EXC_ERR, well inside any caller's deadline.
constexpr uint8_t kAckTimeout = 14;
constexpr uint8_t kRetries = 7;
constexpr uint8_t kMinRnrTimer = 12;  // 0.64 ms before a receiver-not-ready retry

bool IsIpv4Mapped(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

// The GID index rdma_cm would use for an IPv4 peer; see the header.
Result<int> PickGidIndex(ibv_context* context, uint8_t port, int table_length) {
  int roce_v2 = -1;
  for (int i = 0; i < table_length; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context, port, static_cast<uint32_t>(i), &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    if (IsIpv4Mapped(entry.gid)) return i;
    if (roce_v2 < 0) roce_v2 = i;
  }
  return roce_v2 >= 0 ? roce_v2 : 0;
}

}  // namespace

Result<std::unique_ptr<RcQueuePair>> RcQueuePair::Create(std::shared_ptr<ProtectionDomain> pd,
                                                         uint8_t port, const RcOptions& options) {
  std::unique_ptr<RcQueuePair> self(new RcQueuePair());
  ibv_context* context = pd->context();
  self->pd_ = std::move(pd);
  ibv_port_attr port_attr{};
  if (int err = ibv_query_port(context, port, &port_attr); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_query_port({})", port));
  }
  self->mtu_ = port_attr.active_mtu;
  REELFS_ASSIGN_OR_RETURN(self->gid_index_, PickGidIndex(context, port, port_attr.gid_tbl_len));
  ibv_gid gid{};
  if (int err = ibv_query_gid(context, port, self->gid_index_, &gid); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_query_gid({}, {})", port, self->gid_index_));
  }
  REELFS_ASSIGN_OR_RETURN(self->cq_, CompletionQueue::Create(context, options.cq_entries));
  ibv_qp_init_attr init{};
  init.send_cq = self->cq_->cq();
  init.recv_cq = self->cq_->cq();
  init.cap.max_send_wr = options.max_send_wr;
  init.cap.max_recv_wr = options.max_recv_wr;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  self->qp_.reset(ibv_create_qp(self->pd_->pd(), &init));
  if (!self->qp_) return VerbsErrno(errno, "ibv_create_qp(RC)");

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int err = ibv_modify_qp(self->qp_.get(), &attr,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      err != 0) {
    return VerbsErrno(err, "ibv_modify_qp(INIT)");
  }
  // A random first PSN, so packets of an earlier QP that reused this number are not accepted.
  std::random_device random;
  self->local_ = RcEndpoint{
      .qpn = self->qp_->qp_num, .psn = random() & k24Bits, .port = port, .lid = port_attr.lid};
  std::memcpy(self->local_.gid.data(), gid.raw, sizeof(gid.raw));
  return self;
}

Status RcQueuePair::Connect(const RcEndpoint& remote) {
  if (remote.qpn > k24Bits || remote.psn > k24Bits) {
    return Status::InvalidArgument(
        fmt::format("peer qpn {:#x} / psn {:#x} wider than 24 bits", remote.qpn, remote.psn));
  }
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = mtu_;
  rtr.dest_qp_num = remote.qpn;
  rtr.rq_psn = remote.psn;
  rtr.max_dest_rd_atomic = kRdAtomic;
  rtr.min_rnr_timer = kMinRnrTimer;
  rtr.ah_attr.is_global = 1;  // RoCE always routes by GID
  std::memcpy(rtr.ah_attr.grh.dgid.raw, remote.gid.data(), sizeof(rtr.ah_attr.grh.dgid.raw));
  rtr.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
  rtr.ah_attr.grh.hop_limit = 64;
  rtr.ah_attr.dlid = remote.lid;
  rtr.ah_attr.port_num = local_.port;
  if (int err = ibv_modify_qp(qp_.get(), &rtr,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      err != 0) {
    return VerbsErrno(err, fmt::format("ibv_modify_qp(RTR to qpn {:#x})", remote.qpn));
  }
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = kAckTimeout;
  rts.retry_cnt = kRetries;
  rts.rnr_retry = kRetries;  // 7 = unlimited; bounded by the callers' deadlines
  rts.sq_psn = local_.psn;
  rts.max_rd_atomic = kRdAtomic;
  if (int err = ibv_modify_qp(qp_.get(), &rts,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      err != 0) {
    return VerbsErrno(err, "ibv_modify_qp(RTS)");
  }
  return Status::Ok();
}

Status RcQueuePair::PostWrite(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                              uint64_t wr_id) {
  return verbs::PostWrite(qp_.get(), local, remote_addr, rkey, wr_id);
}

Status RcQueuePair::PostWriteWithImm(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                                     uint32_t imm, uint64_t wr_id) {
  return verbs::PostWriteWithImm(qp_.get(), local, remote_addr, rkey, imm, wr_id);
}

Status RcQueuePair::PostRead(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                             uint64_t wr_id) {
  return verbs::PostRead(qp_.get(), local, remote_addr, rkey, wr_id);
}

Status RcQueuePair::PostRecv(uint64_t wr_id) { return verbs::PostRecv(qp_.get(), wr_id); }

Result<ibv_wc> RcQueuePair::WaitCompletion(Timeout timeout) { return cq_->Wait(timeout); }

Result<ibv_qp_state> RcQueuePair::QueryState() const { return QueryQpState(qp_.get()); }

Status RcQueuePair::MoveToError() {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (int err = ibv_modify_qp(qp_.get(), &attr, IBV_QP_STATE); err != 0) {
    return VerbsErrno(err, "ibv_modify_qp(ERR)");
  }
  return Status::Ok();
}

}  // namespace reelfs::rdmaio::verbs

#include "rdmaio/verbs/queue.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

#include <arpa/inet.h>
#include <fmt/format.h>

#include "rdmaio/verbs/fd_wait_internal.h"
#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace internal {

Status SetNonBlocking(int fd, const char* what) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return VerbsErrno(errno, fmt::format("fcntl(O_NONBLOCK) on {}", what));
  }
  return Status::Ok();
}

Result<bool> WaitReadable(int fd, Deadline deadline) {
  while (true) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return VerbsErrno(errno, "poll");
  }
}

}  // namespace internal

namespace {

Status PostSend(ibv_qp* qp, ibv_wr_opcode opcode, LocalSlice local, uint64_t remote_addr,
                uint32_t rkey, uint32_t imm, uint64_t wr_id, const char* what) {
  ibv_sge sge{.addr = reinterpret_cast<uint64_t>(local.bytes.data()),
              .length = static_cast<uint32_t>(local.bytes.size()),
              .lkey = local.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = local.bytes.empty() ? 0 : 1;
  wr.opcode = opcode;
  wr.imm_data = htonl(imm);
  wr.wr.rdma = {.remote_addr = remote_addr, .rkey = rkey};
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(qp, &wr, &bad); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_post_send({})", what));
  }
  return Status::Ok();
}

}  // namespace

Result<CompletionQueue> CompletionQueue::Create(ibv_context* context, uint32_t entries) {
  CompletionQueue q;
  q.channel_.reset(ibv_create_comp_channel(context));
  if (!q.channel_) return VerbsErrno(errno, "ibv_create_comp_channel");
  REELFS_RETURN_IF_ERROR(internal::SetNonBlocking(q.channel_->fd, "the completion channel"));
  q.cq_.reset(ibv_create_cq(context, static_cast<int>(entries), nullptr, q.channel_.get(), 0));
  if (!q.cq_) return VerbsErrno(errno, fmt::format("ibv_create_cq({})", entries));
  if (int err = ibv_req_notify_cq(q.cq_.get(), 0); err != 0) {
    return VerbsErrno(err, "ibv_req_notify_cq");
  }
  return q;
}

Result<ibv_wc> CompletionQueue::Wait(Timeout timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ibv_wc wc{};
    const int n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n < 0) return Status::Internal("ibv_poll_cq failed");
    if (n == 1) return wc;
    // Nothing queued: sleep on the completion channel (armed at creation and after each event),
    // then poll again, so a completion that raced the re-arm is not missed.
    REELFS_ASSIGN_OR_RETURN(bool readable, internal::WaitReadable(channel_->fd, deadline));
    if (!readable) {
      return Status::DeadlineExceeded(
          fmt::format("no work completion within {} ms", timeout.count()));
    }
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(channel_.get(), &cq, &context) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return VerbsErrno(errno, "ibv_get_cq_event");
    }
    ibv_ack_cq_events(cq, 1);  // ibv_destroy_cq waits for every event to be acked
    if (int err = ibv_req_notify_cq(cq_.get(), 0); err != 0) {
      return VerbsErrno(err, "ibv_req_notify_cq");
    }
  }
}

Status PostWrite(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                 uint64_t wr_id) {
  return PostSend(qp, IBV_WR_RDMA_WRITE, local, remote_addr, rkey, 0, wr_id, "RDMA WRITE");
}

Status PostWriteWithImm(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                        uint32_t imm, uint64_t wr_id) {
  return PostSend(qp, IBV_WR_RDMA_WRITE_WITH_IMM, local, remote_addr, rkey, imm, wr_id,
                  "RDMA WRITE with immediate");
}

Status PostRead(ibv_qp* qp, LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id) {
  return PostSend(qp, IBV_WR_RDMA_READ, local, remote_addr, rkey, 0, wr_id, "RDMA READ");
}

Status PostRecv(ibv_qp* qp, uint64_t wr_id) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  ibv_recv_wr* bad = nullptr;
  if (int err = ibv_post_recv(qp, &wr, &bad); err != 0) return VerbsErrno(err, "ibv_post_recv");
  return Status::Ok();
}

Result<ibv_qp_state> QueryQpState(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (int err = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init); err != 0) {
    return VerbsErrno(err, "ibv_query_qp");
  }
  return attr.qp_state;
}

}  // namespace reelfs::rdmaio::verbs

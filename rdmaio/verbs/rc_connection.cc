#include "rdmaio/verbs/rc_connection.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include "rdmaio/verbs/fd_wait_internal.h"
#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace {

using Clock = std::chrono::steady_clock;

using internal::SetNonBlocking;
using internal::WaitReadable;

// The next rdma_cm event on `channel` (non-blocking), or kDeadlineExceeded.
Result<CmEventHandle> NextCmEvent(rdma_event_channel* channel, Clock::time_point deadline,
                                  std::string_view what) {
  while (true) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) == 0) return CmEventHandle(event);
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return VerbsErrno(errno, fmt::format("rdma_get_cm_event ({})", what));
    }
    REELFS_ASSIGN_OR_RETURN(bool readable, WaitReadable(channel->fd, deadline));
    if (!readable) {
      return Status::DeadlineExceeded(fmt::format("{}: no rdma_cm event in time", what));
    }
  }
}

// The IB CM's reject reason for a connect request to a service id (port) nobody listens on
// (IBTA CM REJ reason 8, IB_CM_REJ_INVALID_SERVICE_ID in the kernel; rxe reports it too).
constexpr int kRejectNoListener = 8;

// Waits for `expected`; any other event ends the wait with kUnavailable naming it. Rejections
// carry the CM's reason in event->status.
Result<CmEventHandle> ExpectCmEvent(rdma_event_channel* channel, rdma_cm_event_type expected,
                                    Clock::time_point deadline, std::string_view what) {
  REELFS_ASSIGN_OR_RETURN(CmEventHandle event, NextCmEvent(channel, deadline, what));
  if (event->event == expected) return event;
  std::string hint;
  if (event->event == RDMA_CM_EVENT_REJECTED) {
    hint = event->status == kRejectNoListener ? " (nobody listens on that port)"
                                              : " (the peer refused)";
  } else if (event->event == RDMA_CM_EVENT_UNREACHABLE) {
    hint = " (no route or the peer did not answer)";
  }
  return Status::Unavailable(fmt::format("{}: got {} (status {}){} instead of {}", what,
                                         rdma_event_str(event->event), event->status, hint,
                                         rdma_event_str(expected)));
}

Result<sockaddr_storage> ParseAddress(const std::string& ip, uint16_t port) {
  sockaddr_storage storage{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
  } else {
    return Status::InvalidArgument(fmt::format("not an IP address: {}", ip));
  }
  return storage;
}

Result<EventChannelHandle> CreateEventChannel() {
  EventChannelHandle channel(rdma_create_event_channel());
  if (!channel) return VerbsErrno(errno, "rdma_create_event_channel");
  REELFS_RETURN_IF_ERROR(SetNonBlocking(channel->fd, "the rdma_cm event channel"));
  return channel;
}

Result<CmIdHandle> CreateId(rdma_event_channel* channel) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    return VerbsErrno(errno, "rdma_create_id");
  }
  return CmIdHandle(id);
}

Status CheckPd(const ProtectionDomain& pd, const rdma_cm_id* id) {
  if (pd.context() != id->verbs) {
    return Status::InvalidArgument(
        "the protection domain is not on the rdma_cm id's device context (allocate it with "
        "ProtectionDomain::OnContext(context()))");
  }
  return Status::Ok();
}

rdma_conn_param ConnParam(std::span<const uint8_t> private_data) {
  return rdma_conn_param{
      .private_data = private_data.data(),
      .private_data_len = static_cast<uint8_t>(private_data.size()),
      .responder_resources = 4,  // outstanding RDMA READs the peer may issue against us
      .initiator_depth = 4,
      .flow_control = 1,
      .retry_count = 7,      // transport retries before IBV_WC_RETRY_EXC_ERR
      .rnr_retry_count = 7,  // 7 = retry forever on receiver-not-ready (bounded by our timeouts)
  };
}

std::vector<uint8_t> PrivateData(const rdma_cm_event& event) {
  const auto* p = static_cast<const uint8_t*>(event.param.conn.private_data);
  if (p == nullptr) return {};
  return std::vector<uint8_t>(p, p + event.param.conn.private_data_len);
}

}  // namespace

RcConnection::~RcConnection() {
  // Best effort: tells the peer at once instead of letting its retries time out.
  if (established_) rdma_disconnect(id_.get());
}

Status RcConnection::CreateQueuePair(const RcOptions& options) {
  REELFS_ASSIGN_OR_RETURN(cq_, CompletionQueue::Create(id_->verbs, options.cq_entries));
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_->cq();
  attr.recv_cq = cq_->cq();
  attr.cap.max_send_wr = options.max_send_wr;
  attr.cap.max_recv_wr = options.max_recv_wr;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 1;
  if (rdma_create_qp(id_.get(), pd_->pd(), &attr) != 0) {
    return VerbsErrno(errno, "rdma_create_qp");
  }
  qp_.reset(id_.get());
  return Status::Ok();
}

Status RcConnection::PostWrite(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                               uint64_t wr_id) {
  return verbs::PostWrite(id_->qp, local, remote_addr, rkey, wr_id);
}

Status RcConnection::PostWriteWithImm(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                                      uint32_t imm, uint64_t wr_id) {
  return verbs::PostWriteWithImm(id_->qp, local, remote_addr, rkey, imm, wr_id);
}

Status RcConnection::PostRead(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                              uint64_t wr_id) {
  return verbs::PostRead(id_->qp, local, remote_addr, rkey, wr_id);
}

Status RcConnection::PostRecv(uint64_t wr_id) { return verbs::PostRecv(id_->qp, wr_id); }

Result<ibv_wc> RcConnection::WaitCompletion(Timeout timeout) { return cq_->Wait(timeout); }

Result<ibv_qp_state> RcConnection::QueryState() const { return QueryQpState(id_->qp); }

Result<std::unique_ptr<RcConnector>> RcConnector::Resolve(const std::string& ip, uint16_t port,
                                                          Timeout timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string peer = fmt::format("{}:{}", ip, port);
  REELFS_ASSIGN_OR_RETURN(sockaddr_storage addr, ParseAddress(ip, port));
  std::unique_ptr<RcConnector> self(new RcConnector());
  self->peer_ = peer;
  self->connection_.reset(new RcConnection());
  RcConnection& c = *self->connection_;
  REELFS_ASSIGN_OR_RETURN(c.events_, CreateEventChannel());
  REELFS_ASSIGN_OR_RETURN(c.id_, CreateId(c.events_.get()));
  const int ms = static_cast<int>(timeout.count());
  if (rdma_resolve_addr(c.id_.get(), nullptr, reinterpret_cast<sockaddr*>(&addr), ms) != 0) {
    return VerbsErrno(errno, fmt::format("rdma_resolve_addr({})", peer));
  }
  REELFS_ASSIGN_OR_RETURN(CmEventHandle resolved,
                          ExpectCmEvent(c.events_.get(), RDMA_CM_EVENT_ADDR_RESOLVED, deadline,
                                        fmt::format("resolving {}", peer)));
  resolved.reset();
  if (rdma_resolve_route(c.id_.get(), ms) != 0) {
    return VerbsErrno(errno, fmt::format("rdma_resolve_route({})", peer));
  }
  REELFS_ASSIGN_OR_RETURN(CmEventHandle routed,
                          ExpectCmEvent(c.events_.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, deadline,
                                        fmt::format("route to {}", peer)));
  return self;
}

ibv_context* RcConnector::context() const { return connection_->id_->verbs; }

Result<std::unique_ptr<RcConnection>> RcConnector::Connect(std::unique_ptr<RcConnector> self,
                                                           std::shared_ptr<ProtectionDomain> pd,
                                                           std::span<const uint8_t> private_data,
                                                           Timeout timeout,
                                                           const RcOptions& options) {
  const auto deadline = Clock::now() + timeout;
  std::unique_ptr<RcConnection> c = std::move(self->connection_);
  REELFS_RETURN_IF_ERROR(CheckPd(*pd, c->id_.get()));
  c->pd_ = std::move(pd);
  REELFS_RETURN_IF_ERROR(c->CreateQueuePair(options));
  rdma_conn_param param = ConnParam(private_data);
  if (rdma_connect(c->id_.get(), &param) != 0) {
    return VerbsErrno(errno, fmt::format("rdma_connect({})", self->peer_));
  }
  REELFS_ASSIGN_OR_RETURN(CmEventHandle established,
                          ExpectCmEvent(c->events_.get(), RDMA_CM_EVENT_ESTABLISHED, deadline,
                                        fmt::format("connecting to {}", self->peer_)));
  c->peer_private_data_ = PrivateData(*established);
  c->established_ = true;
  return c;
}

Result<std::unique_ptr<RcListener>> RcListener::Listen(const std::string& ip, uint16_t port) {
  REELFS_ASSIGN_OR_RETURN(sockaddr_storage addr, ParseAddress(ip, port));
  std::unique_ptr<RcListener> self(new RcListener());
  REELFS_ASSIGN_OR_RETURN(self->events_, CreateEventChannel());
  REELFS_ASSIGN_OR_RETURN(self->id_, CreateId(self->events_.get()));
  if (rdma_bind_addr(self->id_.get(), reinterpret_cast<sockaddr*>(&addr)) != 0) {
    return VerbsErrno(errno, fmt::format("rdma_bind_addr({}:{})", ip, port));
  }
  if (self->id_->verbs == nullptr) {
    return Status::InvalidArgument(
        fmt::format("{} is not an address of an RDMA device (bound to no device)", ip));
  }
  constexpr int kBacklog = 8;
  if (rdma_listen(self->id_.get(), kBacklog) != 0) {
    return VerbsErrno(errno, fmt::format("rdma_listen({}:{})", ip, port));
  }
  return self;
}

uint16_t RcListener::port() const { return ntohs(rdma_get_src_port(id_.get())); }

Result<std::unique_ptr<RcConnection>> RcListener::Accept(std::shared_ptr<ProtectionDomain> pd,
                                                         std::span<const uint8_t> private_data,
                                                         Timeout timeout,
                                                         const RcOptions& options) {
  const auto deadline = Clock::now() + timeout;
  std::unique_ptr<RcConnection> c(new RcConnection());
  {
    REELFS_ASSIGN_OR_RETURN(CmEventHandle request,
                            ExpectCmEvent(events_.get(), RDMA_CM_EVENT_CONNECT_REQUEST, deadline,
                                          "waiting for a connect request"));
    c->peer_private_data_ = PrivateData(*request);
    rdma_cm_id* child = request->id;
    request.reset();  // acked: rdma_destroy_id(child) would wait for this ack
    c->id_.reset(child);
  }
  // Move the new id to its own event channel so the connection outlives the listener and its
  // events (ESTABLISHED, DISCONNECTED) do not mix with other connect requests.
  CmIdHandle id = std::move(c->id_);
  REELFS_ASSIGN_OR_RETURN(c->events_, CreateEventChannel());
  if (rdma_migrate_id(id.get(), c->events_.get()) != 0) {
    return VerbsErrno(errno, "rdma_migrate_id");
  }
  c->id_ = std::move(id);
  Status ready = CheckPd(*pd, c->id_.get());
  if (ready.ok()) {
    c->pd_ = std::move(pd);
    ready = c->CreateQueuePair(options);
  }
  if (!ready.ok()) {
    // Tell the peer now rather than letting its connect wait out its timeout.
    rdma_reject(c->id_.get(), nullptr, 0);
    return ready;
  }
  rdma_conn_param param = ConnParam(private_data);
  if (rdma_accept(c->id_.get(), &param) != 0) return VerbsErrno(errno, "rdma_accept");
  REELFS_ASSIGN_OR_RETURN(CmEventHandle established,
                          ExpectCmEvent(c->events_.get(), RDMA_CM_EVENT_ESTABLISHED, deadline,
                                        "accepting a connection"));
  c->established_ = true;
  return c;
}

}  // namespace reelfs::rdmaio::verbs

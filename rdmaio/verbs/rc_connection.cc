#include "rdmaio/verbs/rc_connection.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace {

using Clock = std::chrono::steady_clock;

Status SetNonBlocking(int fd, const char* what) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return VerbsErrno(errno, fmt::format("fcntl(O_NONBLOCK) on {}", what));
  }
  return Status::Ok();
}

// Waits until `fd` is readable or the deadline passes. Returns false on timeout.
Result<bool> WaitReadable(int fd, Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return VerbsErrno(errno, "poll");
  }
}

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
  ibv_context* context = id_->verbs;
  comp_channel_.reset(ibv_create_comp_channel(context));
  if (!comp_channel_) return VerbsErrno(errno, "ibv_create_comp_channel");
  REELFS_RETURN_IF_ERROR(SetNonBlocking(comp_channel_->fd, "the completion channel"));
  cq_.reset(ibv_create_cq(context, static_cast<int>(options.cq_entries), nullptr,
                          comp_channel_.get(), 0));
  if (!cq_) return VerbsErrno(errno, fmt::format("ibv_create_cq({})", options.cq_entries));
  if (int err = ibv_req_notify_cq(cq_.get(), 0); err != 0) {
    return VerbsErrno(err, "ibv_req_notify_cq");
  }
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_.get();
  attr.recv_cq = cq_.get();
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

Status RcConnection::Post(ibv_send_wr& wr, const char* what) {
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(id_->qp, &wr, &bad); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_post_send({})", what));
  }
  return Status::Ok();
}

Status RcConnection::PostWrite(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                               uint64_t wr_id) {
  ibv_sge sge{.addr = reinterpret_cast<uint64_t>(local.bytes.data()),
              .length = static_cast<uint32_t>(local.bytes.size()),
              .lkey = local.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma = {.remote_addr = remote_addr, .rkey = rkey};
  return Post(wr, "RDMA WRITE");
}

Status RcConnection::PostWriteWithImm(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                                      uint32_t imm, uint64_t wr_id) {
  ibv_sge sge{.addr = reinterpret_cast<uint64_t>(local.bytes.data()),
              .length = static_cast<uint32_t>(local.bytes.size()),
              .lkey = local.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = local.bytes.empty() ? 0 : 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = htonl(imm);
  wr.wr.rdma = {.remote_addr = remote_addr, .rkey = rkey};
  return Post(wr, "RDMA WRITE with immediate");
}

Status RcConnection::PostRead(LocalSlice local, uint64_t remote_addr, uint32_t rkey,
                              uint64_t wr_id) {
  ibv_sge sge{.addr = reinterpret_cast<uint64_t>(local.bytes.data()),
              .length = static_cast<uint32_t>(local.bytes.size()),
              .lkey = local.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma = {.remote_addr = remote_addr, .rkey = rkey};
  return Post(wr, "RDMA READ");
}

Status RcConnection::PostRecv(uint64_t wr_id) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  ibv_recv_wr* bad = nullptr;
  if (int err = ibv_post_recv(id_->qp, &wr, &bad); err != 0) {
    return VerbsErrno(err, "ibv_post_recv");
  }
  return Status::Ok();
}

Result<ibv_wc> RcConnection::WaitCompletion(Timeout timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    ibv_wc wc{};
    const int n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n < 0) return Status::Internal("ibv_poll_cq failed");
    if (n == 1) return wc;
    // Nothing queued: sleep on the completion channel (armed at creation and after each event),
    // then poll again, so a completion that raced the re-arm is not missed.
    REELFS_ASSIGN_OR_RETURN(bool readable, WaitReadable(comp_channel_->fd, deadline));
    if (!readable) {
      return Status::DeadlineExceeded(
          fmt::format("no work completion within {} ms", timeout.count()));
    }
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(comp_channel_.get(), &cq, &context) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return VerbsErrno(errno, "ibv_get_cq_event");
    }
    ibv_ack_cq_events(cq, 1);  // ibv_destroy_cq waits for every event to be acked
    if (int err = ibv_req_notify_cq(cq_.get(), 0); err != 0) {
      return VerbsErrno(err, "ibv_req_notify_cq");
    }
  }
}

Result<ibv_qp_state> RcConnection::QueryState() const {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (int err = ibv_query_qp(id_->qp, &attr, IBV_QP_STATE, &init); err != 0) {
    return VerbsErrno(err, "ibv_query_qp");
  }
  return attr.qp_state;
}

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

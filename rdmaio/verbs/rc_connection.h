// RcConnection: one reliable-connected queue pair set up through rdma_cm, with its CQ, and the
// listener / connector that make one. This is the transport under the hipobj-rc-v2 channel
// (docs/protocols/rdma.md §2.3); the channel itself (PREPARE / READY over HTTP) is built on it.
//
// Every wait has a deadline: rdma_cm events and completions are read from non-blocking channels
// with poll(2), so an unreachable peer, a refused connection or a QP in error becomes a Status,
// never a hang. Connect/accept may carry a few bytes of private data (rdma_cm allows 56 bytes on
// a connect request, 196 on an accept).
//
// Thread-safety: an RcConnection is used by one thread at a time (posting and polling share the
// CQ). Different connections are independent. RcListener likewise.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/handles.h"
#include "rdmaio/verbs/queue.h"

namespace reelfs::rdmaio::verbs {

class RcConnection {
 public:
  ~RcConnection();
  RcConnection(const RcConnection&) = delete;
  RcConnection& operator=(const RcConnection&) = delete;

  // One-sided operations and waits on this connection's QP and CQ (queue.h).
  Status PostWrite(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
  Status PostWriteWithImm(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint32_t imm,
                          uint64_t wr_id);
  Status PostRead(LocalSlice local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
  Status PostRecv(uint64_t wr_id);

  Result<ibv_wc> WaitCompletion(Timeout timeout);

  Result<ibv_qp_state> QueryState() const;

  const std::shared_ptr<ProtectionDomain>& pd() const { return pd_; }
  // Private data the peer sent with its connect request / accept.
  const std::vector<uint8_t>& peer_private_data() const { return peer_private_data_; }

 private:
  friend class RcListener;
  friend class RcConnector;
  RcConnection() = default;
  // Creates the completion queue and the QP on id_ with pd_.
  Status CreateQueuePair(const RcOptions& options);

  // Acquisition order; destroyed in reverse: QP, CQ (and its channel), cm id, event channel, PD.
  std::shared_ptr<ProtectionDomain> pd_;
  EventChannelHandle events_;
  CmIdHandle id_;
  std::optional<CompletionQueue> cq_;
  CmQpHandle qp_;
  bool established_ = false;
  std::vector<uint8_t> peer_private_data_;
};

// Client side: resolve, then connect. Split in two because memory must be registered on the PD
// of the device the address resolved to before the connect request can advertise it.
class RcConnector {
 public:
  // Resolves `ip`:`port` (address and route) to a local RDMA device. kUnavailable when no RDMA
  // device reaches it.
  [[nodiscard]] static Result<std::unique_ptr<RcConnector>> Resolve(const std::string& ip,
                                                                    uint16_t port, Timeout timeout);
  // The device context the route uses: allocate the PD here (ProtectionDomain::OnContext).
  ibv_context* context() const;

  // Connects with `pd` (on context()). kUnavailable with the rdma_cm event when the peer rejects
  // or nobody listens; kDeadlineExceeded after `timeout`. Consumes the connector.
  [[nodiscard]] static Result<std::unique_ptr<RcConnection>> Connect(
      std::unique_ptr<RcConnector> self, std::shared_ptr<ProtectionDomain> pd,
      std::span<const uint8_t> private_data, Timeout timeout, const RcOptions& options = {});

 private:
  RcConnector() = default;
  std::string peer_;
  std::unique_ptr<RcConnection> connection_;  // id and event channel, no QP yet
};

class RcListener {
 public:
  // Listens on `ip`:`port` (0: an ephemeral port, see port()). `ip` must be an address of an
  // RDMA device so the listener has a device context (for the PD).
  [[nodiscard]] static Result<std::unique_ptr<RcListener>> Listen(const std::string& ip,
                                                                  uint16_t port);
  uint16_t port() const;
  ibv_context* context() const { return id_->verbs; }

  // Waits for one connect request, accepts it with `private_data` and waits until established.
  [[nodiscard]] Result<std::unique_ptr<RcConnection>> Accept(std::shared_ptr<ProtectionDomain> pd,
                                                             std::span<const uint8_t> private_data,
                                                             Timeout timeout,
                                                             const RcOptions& options = {});

 private:
  RcListener() = default;
  EventChannelHandle events_;
  CmIdHandle id_;
};

}  // namespace reelfs::rdmaio::verbs

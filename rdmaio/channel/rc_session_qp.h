// RcSessionQp / RcQpProvider: the verbs a hipobj-rc-v2 session needs, behind an interface free
// of rdma-core, so the channel's protocol logic (rc_channel.h) builds and is unit-tested against
// fakes on machines without libibverbs, and runs over RcQueuePair on machines with it
// (rdmaio/verbs/verbs_qp_provider.h).
//
// A session QP is one client RC queue pair connected by hand to one server QP. The server writes
// GET data into our windows through it; its last write of each transfer carries an immediate and
// so consumes a receive we posted. Fence() is the channel's fence for a window whose request
// failed (docs/protocols/rdma.md §5, §6): the QP goes to ERR, so nothing the server still has in
// flight on that session can land in our memory any more.
//
// Thread-safety: an RcSessionQp is used by one request at a time (the channel's session pool
// guarantees it). RcQpProvider methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "rdmaio/channel/window_address.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"
#include "rdmaio/wire/gid.h"

namespace reelfs::rdmaio::channel {

// What one side tells the other (the RC token's qpn / gid / port / lid plus x-amz-rdma-psn).
struct RcEndpoint {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits: the first packet sequence number this side sends
  wire::Gid gid{};
  uint8_t port = 1;
  uint16_t lid = 0;  // 0 on RoCE
};

class RcSessionQp {
 public:
  virtual ~RcSessionQp() = default;
  // This QP's endpoint (qpn, initial psn, gid, port, lid) for the PREPARE token.
  virtual const RcEndpoint& local() const = 0;
  // INIT -> RTR -> RTS towards the server's QP.
  virtual Status Connect(const RcEndpoint& remote) = 0;
  // A zero-length receive for the final WRITE_WITH_IMM of a transfer.
  virtual Status PostRecv(uint64_t wr_id) = 0;
  // Reaps the completions that are there, without waiting: the receives consumed so far, or an
  // error when a completion failed (the QP is then in ERR and the session must go).
  virtual Result<int> ReapReceives() = 0;
  // Moves the QP to ERR (idempotent). After it returns the peer cannot write through this QP.
  virtual Status Fence() = 0;
};

class RcQpProvider {
 public:
  virtual ~RcQpProvider() = default;
  virtual Result<std::unique_ptr<RcSessionQp>> CreateQp() = 0;
  // The remote address and rkey of `window`; kInvalidArgument for a region this provider did
  // not register (another protection domain's, or a foreign implementation's).
  virtual Result<WindowAddress> Locate(const RegisteredWindow& window) const = 0;
  virtual MemoryRegistrar& registrar() = 0;
};

}  // namespace reelfs::rdmaio::channel

// DcTarget / DcTargetProvider: the client side of cuObject DC (docs/protocols/rdma-dc.md).
//
// In DC the client is passive: it owns a DC *target* (DCT), a QP that any DC initiator on the
// fabric holding the DC key may address by number (DCTN). The server's initiator writes GET data
// straight into the window named by the 81-character token (addr, size, rkey, lid, dctn, gid);
// there is no handshake, no completion on our side, and the HTTP answer is the completion.
//
// Fence(): a request that failed, timed out or was cancelled may still have writes in flight for
// its token. The token names the DCTN, so destroying that DCT makes every later write through it
// fail at the server's initiator (no target) instead of landing in our memory. The replacement is
// created *before* the old one is destroyed, so it cannot get the old number back: the new DCTN
// always differs, and a stale token can never reach the new target. (Revoking the rkey instead
// would invalidate every window of the shared arena at once; the DCT is per target, so a fence
// costs one QP, not the whole buffer pool.)
//
// The interface is free of rdma-core so DcChannel's logic builds and is unit-tested against fakes
// on machines without libibverbs; MlxDcTargetProvider (rdmaio/verbs/mlx_dc_target.h) is the real
// one, on rdma-core with mlx5dv (ConnectX-5 or newer).
//
// Thread-safety: a DcTarget is used by one request at a time (the channel's pool guarantees it).
// DcTargetProvider methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "rdmaio/channel/window_address.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"
#include "rdmaio/wire/gid.h"

namespace reelfs::rdmaio::channel {

// What a DC token says about the target (the rest of the token is the window).
struct DcAddress {
  uint32_t dctn = 0;         // 24-bit DCT number
  uint16_t lid = 0;          // 0 on RoCE
  bool gid_present = false;  // true on RoCE: the initiator routes by GID
  wire::Gid gid{};
};

class DcTarget {
 public:
  virtual ~DcTarget() = default;  // destroys the DCT
  virtual const DcAddress& address() const = 0;
  // Destroys this DCT and replaces it with a new one (new DCTN): nothing sent for a token naming
  // the old number can land any more. On error the target is unusable (address() stale) and the
  // caller must drop it; the DCT has still been destroyed when the error is from the creation.
  virtual Status Fence() = 0;
};

class DcTargetProvider {
 public:
  virtual ~DcTargetProvider() = default;
  virtual Result<std::unique_ptr<DcTarget>> CreateTarget() = 0;
  // The address and rkey of `window`; kInvalidArgument for a region not registered on this
  // provider's protection domain.
  virtual Result<WindowAddress> Locate(const RegisteredWindow& window) const = 0;
  virtual MemoryRegistrar& registrar() = 0;
};

}  // namespace reelfs::rdmaio::channel

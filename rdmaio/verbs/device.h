// RDMA device and port discovery, and the protection domain everything else hangs off.
//
// `reelfs mount --rdma[=DEVICE]` (later) calls FindActivePort: the named device, or the first one
// with an active port. When there is none the Status says which devices exist and in what state,
// so "no RDMA here" is a one-line diagnosis, not a silent fallback.
//
// Thread-safety: the free functions may be called from any thread. A ProtectionDomain is
// immutable after creation and may be shared (verbs calls on a PD are thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <infiniband/verbs.h>

#include "common/result.h"
#include "rdmaio/verbs/handles.h"

namespace reelfs::rdmaio::verbs {

struct PortInfo {
  uint8_t port = 0;  // 1-based, as verbs numbers them
  ibv_port_state state = IBV_PORT_NOP;
  uint8_t link_layer = IBV_LINK_LAYER_UNSPECIFIED;  // Ethernet for RoCE (Soft-RoCE included)
  bool active() const { return state == IBV_PORT_ACTIVE; }
};

struct DeviceInfo {
  std::string name;  // e.g. "rxe0", "mlx5_0"
  std::vector<PortInfo> ports;
};

struct DevicePort {
  std::string device;
  uint8_t port = 0;
};

// Every device libibverbs sees with its ports. An empty vector when there is none (the kernel has
// no RDMA, or no provider library is installed); an error only when a device cannot be queried.
Result<std::vector<DeviceInfo>> ListDevices();

// "rxe0 (port 1 ACTIVE, Ethernet)"; "no RDMA devices" for an empty list.
std::string DescribeDevices(const std::vector<DeviceInfo>& devices);

// `device` ("" for any) and its first active port. kNotFound when there is no device at all, or
// none of that name; kUnavailable when the device exists but no port is active. Both list what
// was found.
Result<DevicePort> FindActivePort(std::string_view device);

// A protection domain plus the device context it lives on. Memory registered on it can be used by
// queue pairs created on the same PD only: a PD is the unit of "who may touch this memory".
class ProtectionDomain {
 public:
  // Opens `where.device` with ibv_open_device and allocates a PD on it.
  static Result<std::shared_ptr<ProtectionDomain>> Open(const DevicePort& where);
  // A PD on a context someone else owns (librdmacm opens its own contexts: a QP made through
  // rdma_cm must use a PD on id->verbs). `context` must outlive the PD.
  static Result<std::shared_ptr<ProtectionDomain>> OnContext(ibv_context* context);

  ibv_pd* pd() const { return pd_.get(); }
  ibv_context* context() const { return pd_->context; }

 private:
  ProtectionDomain(ContextHandle owned, PdHandle pd)
      : owned_context_(std::move(owned)), pd_(std::move(pd)) {}

  ContextHandle owned_context_;  // empty for OnContext; destroyed after pd_
  PdHandle pd_;
};

}  // namespace reelfs::rdmaio::verbs

#include "rdmaio/verbs/device.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {
namespace {

const char* LinkLayerName(uint8_t link_layer) {
  switch (link_layer) {
    case IBV_LINK_LAYER_INFINIBAND:
      return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    default:
      return "unspecified";
  }
}

Result<DeviceInfo> QueryDevice(ibv_device* device) {
  DeviceInfo info{.name = ibv_get_device_name(device)};
  ContextHandle context(ibv_open_device(device));
  if (!context) return VerbsErrno(errno, fmt::format("ibv_open_device({})", info.name));
  ibv_device_attr attr{};
  if (int err = ibv_query_device(context.get(), &attr); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_query_device({})", info.name));
  }
  for (uint8_t port = 1; port <= attr.phys_port_cnt; ++port) {
    ibv_port_attr port_attr{};
    if (int err = ibv_query_port(context.get(), port, &port_attr); err != 0) {
      return VerbsErrno(err, fmt::format("ibv_query_port({}, {})", info.name, port));
    }
    info.ports.push_back(
        PortInfo{.port = port, .state = port_attr.state, .link_layer = port_attr.link_layer});
  }
  return info;
}

}  // namespace

Result<std::vector<DeviceInfo>> ListDevices() {
  int count = 0;
  DeviceListHandle list(ibv_get_device_list(&count));
  if (!list) {
    // ENOSYS: the kernel has no ib_uverbs; that is "no devices", not a failure.
    if (errno == ENOSYS || errno == ENOENT) return std::vector<DeviceInfo>{};
    return VerbsErrno(errno, "ibv_get_device_list");
  }
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    REELFS_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(list.get()[i]));
    devices.push_back(std::move(info));
  }
  return devices;
}

std::string DescribeDevices(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no RDMA devices";
  std::string out;
  for (const DeviceInfo& d : devices) {
    if (!out.empty()) out += ", ";
    out += d.name + " (";
    for (size_t i = 0; i < d.ports.size(); ++i) {
      const PortInfo& p = d.ports[i];
      out += fmt::format("{}port {} {}, {}", i == 0 ? "" : "; ", p.port,
                         ibv_port_state_str(p.state), LinkLayerName(p.link_layer));
    }
    out += ")";
  }
  return out;
}

Result<DevicePort> FindActivePort(std::string_view device) {
  REELFS_ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, ListDevices());
  if (devices.empty()) {
    return Status::NotFound(
        "no RDMA devices (the kernel has no RDMA support or no provider is installed; for "
        "Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE)");
  }
  bool named_seen = false;
  for (const DeviceInfo& d : devices) {
    if (!device.empty() && d.name != device) continue;
    named_seen = true;
    for (const PortInfo& p : d.ports) {
      if (p.active()) return DevicePort{.device = d.name, .port = p.port};
    }
  }
  if (!named_seen) {
    return Status::NotFound(
        fmt::format("no RDMA device named {}; found: {}", device, DescribeDevices(devices)));
  }
  return Status::Unavailable(
      fmt::format("no active RDMA port (is the link up?); found: {}", DescribeDevices(devices)));
}

Result<std::shared_ptr<ProtectionDomain>> ProtectionDomain::Open(const DevicePort& where) {
  int count = 0;
  DeviceListHandle list(ibv_get_device_list(&count));
  if (!list) return VerbsErrno(errno, "ibv_get_device_list");
  for (int i = 0; i < count; ++i) {
    ibv_device* device = list.get()[i];
    if (where.device != ibv_get_device_name(device)) continue;
    ContextHandle context(ibv_open_device(device));
    if (!context) return VerbsErrno(errno, fmt::format("ibv_open_device({})", where.device));
    PdHandle pd(ibv_alloc_pd(context.get()));
    if (!pd) return VerbsErrno(errno, fmt::format("ibv_alloc_pd({})", where.device));
    return std::shared_ptr<ProtectionDomain>(
        new ProtectionDomain(std::move(context), std::move(pd)));
  }
  return Status::NotFound(fmt::format("no RDMA device named {}", where.device));
}

Result<std::shared_ptr<ProtectionDomain>> ProtectionDomain::OnContext(ibv_context* context) {
  if (context == nullptr) return Status::InvalidArgument("ProtectionDomain::OnContext: no context");
  PdHandle pd(ibv_alloc_pd(context));
  if (!pd) {
    return VerbsErrno(errno, fmt::format("ibv_alloc_pd({})", ibv_get_device_name(context->device)));
  }
  return std::shared_ptr<ProtectionDomain>(new ProtectionDomain(ContextHandle(), std::move(pd)));
}

}  // namespace reelfs::rdmaio::verbs

#include "cli/rdma_data_path.h"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/log.h"
#include "rdmaio/channel/dc_channel.h"
#include "rdmaio/channel/rc_channel.h"
#include "rdmaio/channel/transport_router.h"
#include "rdmaio/s3bridge/s3_control_plane.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/mlx_dc_target.h"
#include "rdmaio/verbs/verbs_qp_provider.h"

namespace reelfs::cli {
namespace {

namespace channel = rdmaio::channel;
namespace verbs = rdmaio::verbs;

// The mount's subject: these lines are part of the mount's log (tests/rdma/in_vm_mount.sh reads
// the DC warning there).
constexpr std::string_view kSubject = "fuse";

using CounterSource = std::function<std::optional<rdmaio::ChannelCounters>()>;

Json CountersJson(const rdmaio::ChannelCounters& c) {
  return Json{{"endpoint", c.endpoint},
              {"transport", c.transport},
              {"rdma_requests", c.rdma_requests},
              {"rdma_bytes", c.rdma_bytes},
              {"http_requests", c.http_requests},
              {"http_bytes", c.http_bytes},
              {"fallbacks", c.fallbacks},
              {"sessions_opened", c.sessions_opened},
              {"sessions_fenced", c.sessions_fenced},
              {"failed", c.failed},
              {"rdma_put_requests", c.rdma_put_requests},
              {"rdma_put_bytes", c.rdma_put_bytes},
              {"http_put_requests", c.http_put_requests},
              {"http_put_bytes", c.http_put_bytes}};
}

std::string CountersLine(const rdmaio::ChannelCounters& n) {
  return fmt::format(
      "endpoint={} transport={} rdma_requests={} rdma_bytes={} http_requests={} http_bytes={} "
      "fallbacks={} sessions_opened={} sessions_fenced={} failed={} rdma_put_requests={} "
      "rdma_put_bytes={} http_put_requests={} http_put_bytes={}",
      n.endpoint, n.transport, n.rdma_requests, n.rdma_bytes, n.http_requests, n.http_bytes,
      n.fallbacks, n.sessions_opened, n.sessions_fenced, n.failed, n.rdma_put_requests,
      n.rdma_put_bytes, n.http_put_requests, n.http_put_bytes);
}

// Weak: the FileSystem holding the metrics must not keep the channel (and its QPs) alive.
template <typename ChannelT>
CounterSource WeakCounters(const std::shared_ptr<ChannelT>& strong) {
  return [weak = std::weak_ptr<ChannelT>(strong)]() -> std::optional<rdmaio::ChannelCounters> {
    auto c = weak.lock();
    return c ? std::optional(c->counters()) : std::nullopt;
  };
}

// The DcChannel when the transport allows DC and the device can do it; null otherwise, with the
// reason logged (a warning when DC was asked for, INFO for auto).
std::shared_ptr<channel::DcChannel> OpenDcChannel(
    const RdmaConfig& config, const std::shared_ptr<rdmaio::ControlPlane>& plane,
    const std::shared_ptr<verbs::ProtectionDomain>& pd, const verbs::DevicePort& where) {
  if (config.transport == RdmaTransport::kRc) return nullptr;
  auto provider = verbs::MlxDcTargetProvider::Create(pd, where);
  if (provider.ok()) {
    return channel::DcChannel::Create(plane, std::move(provider).value(), RealClock(),
                                      {.max_targets = config.sessions});
  }
  if (config.transport == RdmaTransport::kDc) {
    REELFS_LOG_WARN(kSubject, "--rdma-transport=dc: {}; using RC", provider.status().message());
  } else {
    REELFS_LOG_INFO(kSubject, "--rdma-transport=auto: no DC ({}); RC only",
                    provider.status().message());
  }
  return nullptr;
}

// Chooses what reads go through (router, DC or RC) and says so.
void Route(const RdmaConfig& config, const verbs::DevicePort& where,
           const rdmaio::ControlPlane& plane, RdmaDataPath& path) {
  if (path.rc != nullptr && path.dc != nullptr) {
    const std::string endpoint = plane.endpoint();
    path.channel = std::make_shared<channel::TransportRouter>(
        path.rc, path.dc,
        [rc_channel = path.rc.get(), endpoint] {
          return rc_channel->policy().state(endpoint, rdmaio::wire::RdmaOp::kGet) ==
                 rdmaio::wire::OpState::kDeclined;
        },
        fmt::format("{} declined hipobj-rc-v2 (RC): cuObject DC", endpoint));
    REELFS_LOG_INFO(kSubject,
                    "--rdma: {} port {}, transport auto: RC (up to {} sessions) until the "
                    "endpoint declines it, then DC (up to {} targets)",
                    where.device, where.port, config.sessions, config.sessions);
  } else if (path.dc != nullptr) {
    path.channel = path.dc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {}, cuObject DC, up to {} targets", where.device,
                    where.port, config.sessions);
  } else {
    path.channel = path.rc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {}, up to {} RC sessions per gateway", where.device,
                    where.port, config.sessions);
  }
}

// One entry per channel, each with its transport.
void AddCounters(RdmaDataPath& path) {
  std::vector<CounterSource> counters;
  if (path.rc != nullptr) counters.push_back(WeakCounters(path.rc));
  if (path.dc != nullptr) counters.push_back(WeakCounters(path.dc));
  path.metrics_json = [counters]() -> Json {
    Json out = Json::array();
    for (const auto& get : counters) {
      std::optional<rdmaio::ChannelCounters> c = get();
      if (c) out.push_back(CountersJson(*c));
    }
    return out.empty() ? Json() : out;
  };
  path.log_line = [counters]() -> std::string {
    std::string out;
    for (const auto& get : counters) {
      std::optional<rdmaio::ChannelCounters> c = get();
      if (!c) continue;
      out += (out.empty() ? "" : "; ") + CountersLine(*c);
    }
    return out;
  };
}

}  // namespace

Status ProbeRdmaPort(const RdmaConfig& config) {
  return verbs::FindActivePort(config.device).status();
}

Status ProbeRdmaDc(const RdmaConfig& config) {
  REELFS_ASSIGN_OR_RETURN(verbs::DevicePort where, verbs::FindActivePort(config.device));
  REELFS_ASSIGN_OR_RETURN(auto pd, verbs::ProtectionDomain::Open(where));
  return verbs::MlxDcTargetProvider::Create(pd, where).status();
}

Result<RdmaDataPath> OpenRdmaDataPath(const RdmaConfig& config,
                                      std::shared_ptr<s3::ObjectStore> store,
                                      const s3::ClientOptions& control) {
  REELFS_ASSIGN_OR_RETURN(verbs::DevicePort where, verbs::FindActivePort(config.device));
  REELFS_ASSIGN_OR_RETURN(std::shared_ptr<verbs::ProtectionDomain> pd,
                          verbs::ProtectionDomain::Open(where));
  REELFS_ASSIGN_OR_RETURN(auto created,
                          rdmaio::s3bridge::S3ControlPlane::Create(std::move(store), control));
  std::shared_ptr<rdmaio::ControlPlane> plane = std::move(created);

  RdmaDataPath path;
  path.dc = OpenDcChannel(config, plane, pd, where);
  if (config.transport != RdmaTransport::kDc || path.dc == nullptr) {
    path.rc_qps = std::make_shared<verbs::VerbsQpProvider>(pd, where.port);
    path.rc = channel::RcChannel::Create(plane, path.rc_qps, RealClock(),
                                         {.max_sessions = config.sessions});
  }
  Route(config, where, *plane, path);
  AddCounters(path);
  return path;
}

}  // namespace reelfs::cli

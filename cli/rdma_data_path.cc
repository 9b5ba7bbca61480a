#include "cli/rdma_data_path.h"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/log.h"
#include "rdmaio/channel/dc_channel.h"
#include "rdmaio/channel/endpoint_spread.h"
#include "rdmaio/channel/rc_channel.h"
#include "rdmaio/channel/transport_router.h"
#include "rdmaio/s3bridge/s3_control_plane.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/mlx_dc_target.h"
#include "rdmaio/verbs/verbs_qp_provider.h"
#include "s3/client/endpoint_set.h"

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

// One endpoint's channels: RC, DC or both (then behind a TransportRouter).
struct EndpointChannels {
  std::shared_ptr<channel::RcChannel> rc;
  std::shared_ptr<channel::DcChannel> dc;
  std::shared_ptr<rdmaio::DataChannel> channel;  // what its fetches go through
};

// Chooses what one endpoint's reads go through (router, DC or RC) and says so.
void Route(const RdmaConfig& config, const verbs::DevicePort& where,
           const rdmaio::ControlPlane& plane, EndpointChannels& e) {
  const std::string endpoint = plane.endpoint();
  if (e.rc != nullptr && e.dc != nullptr) {
    e.channel = std::make_shared<channel::TransportRouter>(
        e.rc, e.dc,
        [rc_channel = e.rc.get(), endpoint] {
          return rc_channel->policy().state(endpoint, rdmaio::wire::RdmaOp::kGet) ==
                 rdmaio::wire::OpState::kDeclined;
        },
        fmt::format("{} declined hipobj-rc-v2 (RC): cuObject DC", endpoint));
    REELFS_LOG_INFO(kSubject,
                    "--rdma: {} port {} to {}, transport auto: RC (up to {} sessions) until the "
                    "endpoint declines it, then DC (up to {} targets)",
                    where.device, where.port, endpoint, config.sessions, config.sessions);
  } else if (e.dc != nullptr) {
    e.channel = e.dc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {} to {}, cuObject DC, up to {} targets",
                    where.device, where.port, endpoint, config.sessions);
  } else {
    e.channel = e.rc;
    REELFS_LOG_INFO(kSubject, "--rdma: {} port {} to {}, up to {} RC sessions", where.device,
                    where.port, endpoint, config.sessions);
  }
}

// One entry per channel, each with its endpoint and transport.
void AddCounters(RdmaDataPath& path, const std::vector<EndpointChannels>& all) {
  std::vector<CounterSource> counters;
  for (const EndpointChannels& e : all) {
    if (e.rc != nullptr) counters.push_back(WeakCounters(e.rc));
    if (e.dc != nullptr) counters.push_back(WeakCounters(e.dc));
  }
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
  // Several front ends (docs/s3-client.md "Several endpoints"): one control plane and one set of
  // channels per endpoint, sharing the protection domain and RC's registrar, spread by
  // EndpointSpread with the HTTP client's view of which endpoints are up.
  const std::vector<std::string> urls = s3::EndpointSet::SplitList(control.endpoint);
  if (urls.empty()) return Status::InvalidArgument("--rdma needs an endpoint");
  RdmaDataPath path;
  std::vector<EndpointChannels> all;
  for (const std::string& url : urls) {
    REELFS_ASSIGN_OR_RETURN(auto created,
                            rdmaio::s3bridge::S3ControlPlane::Create(store, control, url));
    std::shared_ptr<rdmaio::ControlPlane> plane = std::move(created);
    EndpointChannels e;
    e.dc = OpenDcChannel(config, plane, pd, where);
    if (config.transport != RdmaTransport::kDc || e.dc == nullptr) {
      if (path.rc_qps == nullptr)
        path.rc_qps = std::make_shared<verbs::VerbsQpProvider>(pd, where.port);
      e.rc = channel::RcChannel::Create(plane, path.rc_qps, RealClock(),
                                        {.max_sessions = config.sessions});
    }
    Route(config, where, *plane, e);
    all.push_back(std::move(e));
  }
  // The first endpoint's channels, for what only one transport does (tests/rdma/rdma_get.cc).
  path.rc = all.front().rc;
  path.dc = all.front().dc;
  if (all.size() == 1) {
    path.channel = all.front().channel;
  } else {
    std::vector<std::shared_ptr<rdmaio::DataChannel>> channels;
    for (const EndpointChannels& e : all) channels.push_back(e.channel);
    std::function<bool(size_t)> up;
    if (auto client = std::dynamic_pointer_cast<s3::S3Client>(store)) {
      up = [weak = std::weak_ptr<s3::S3Client>(client)](size_t i) {
        auto c = weak.lock();
        return c == nullptr || c->endpoint_up(i);
      };
    }
    path.channel = std::make_shared<channel::EndpointSpread>(std::move(channels), std::move(up));
    REELFS_LOG_INFO(kSubject, "--rdma: sessions spread over {} endpoints", all.size());
  }
  AddCounters(path, all);
  return path;
}

}  // namespace reelfs::cli

// The mount's RDMA data path (`reelfs mount --rdma`): one factory wires the device port, the
// protection domain, the control plane and the channels, so the mount and reelfs-rdma-get
// (tests/rdma/rdma_get.cc) run the same wiring. Which transport (docs/protocols/rdma-dc.md
// "Choosing the transport"):
//   rc    RcChannel (hipobj-rc-v2);
//   dc    DcChannel (cuObject DC v1); when the device cannot do DC, a warning and RcChannel;
//   auto  RcChannel, plus a DcChannel when the device can do DC, behind a TransportRouter that
//         sends fetches to DC once the endpoint has declined hipobj-rc-v2 (a cuObject server
//         answers the PREPARE POST as plain S3). Both channels share one protection domain, so
//         every buffer registered through RC's registrar can be named in a DC token.
//
// Built only where rdma-core was found (cli/CMakeLists.txt, reelfs_cli_rdma). This header names
// no rdma-core type, so it compiles everywhere (reelfs_check_headers).
//
// Thread-safety: the functions may be called from any thread; the channels in an RdmaDataPath are
// thread-safe (rdmaio/data_channel.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/rdma_config.h"
#include "common/json.h"
#include "common/result.h"
#include "rdmaio/data_channel.h"
#include "s3/client/s3_client.h"
#include "s3/object_store.h"

namespace reelfs::rdmaio::channel {
class RcChannel;
class DcChannel;
}  // namespace reelfs::rdmaio::channel
namespace reelfs::rdmaio::verbs {
class VerbsQpProvider;
}  // namespace reelfs::rdmaio::verbs

namespace reelfs::cli {

struct RdmaDataPath {
  // What reads go through: `rc`, `dc`, or a TransportRouter over both.
  std::shared_ptr<rdmaio::DataChannel> channel;
  // The channels behind it, for what only a transport does (RcChannel::Put, its counters). Null
  // when the transport is not in use.
  std::shared_ptr<rdmaio::channel::RcChannel> rc;
  std::shared_ptr<rdmaio::verbs::VerbsQpProvider> rc_qps;  // RC's queue pairs and registrar
  std::shared_ptr<rdmaio::channel::DcChannel> dc;
  // For user.reelfs.metrics and the unmount log. They hold the channels weakly: whoever keeps
  // them (the FileSystem) must not keep the channels and their QPs alive.
  std::function<Json()> metrics_json;  // an array, one object per channel; null: none left
  std::function<std::string()> log_line;
};

// Whether config.device has an active port: OK, or FindActivePort's kNotFound / kUnavailable
// naming the devices it saw.
Status ProbeRdmaPort(const RdmaConfig& config);

// Whether `--rdma-transport=dc` can have DC on the configured device ("rxe0 cannot do DC: not an
// mlx5 (ConnectX) device; ...", "built without mlx5dv"): probed on the user's terminal before the
// mount daemonizes.
Status ProbeRdmaDc(const RdmaConfig& config);

// Builds the data path over `store` (data GETs share its connections, signing and retries) with
// control POSTs sent with `control` (endpoint, credentials, timeouts). Logs, under the mount's
// subject, which transport it chose and why DC is not in use. Fails when there is no active port,
// the protection domain or the control plane cannot be opened.
Result<RdmaDataPath> OpenRdmaDataPath(const RdmaConfig& config,
                                      std::shared_ptr<s3::ObjectStore> store,
                                      const s3::ClientOptions& control);

}  // namespace reelfs::cli

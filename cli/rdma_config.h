// What `reelfs mount --rdma` asks for (RdmaConfig), apart from the mount's other flags so the RDMA
// data-path factory (cli/rdma_data_path.h) and tools that reuse it (tests/rdma/rdma_get.cc) need
// nothing of FUSE. Parsed from the flags in cli/mount_options.cc.
//
// Thread-safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace reelfs::cli {

// --rdma-transport: which RDMA flavour carries the bytes.
enum class RdmaTransport : uint8_t {
  kAuto,  // RC (hipobj-rc-v2) first; cuObject DC once the endpoint declines RC and DC works here
  kRc,    // hipobj-rc-v2 only
  kDc,    // cuObject DC; RC (with a warning) when the device cannot do DC
};

// What --rdma asks for; RunMount builds the channel (only where rdma-core was found).
struct RdmaConfig {
  bool enabled = false;
  std::string device;   // empty: the first device with an active port
  size_t sessions = 4;  // RC sessions, and DC targets, per gateway
  RdmaTransport transport = RdmaTransport::kAuto;
};

}  // namespace reelfs::cli

// ChannelCounters: what an RDMA DataChannel reports about one endpoint, whatever its transport
// (RC hipobj-rc-v2, cuObject DC): bytes and requests per path, fallbacks, sessions, failures.
// The mount logs them at unmount and exposes them in user.reelfs.metrics (docs/protocols/rdma.md).
//
// Thread-safety: a plain value; channels return copies taken under their own lock.
#pragma once

#include <cstdint>
#include <string>

namespace reelfs::rdmaio {

struct ChannelCounters {
  std::string endpoint;
  std::string transport;       // "rdma-rc" or "rdma-dc"
  uint64_t rdma_requests = 0;  // fetches whose bytes the server wrote over RDMA
  uint64_t rdma_bytes = 0;
  uint64_t http_requests = 0;  // fetches whose bytes came in an HTTP body
  uint64_t http_bytes = 0;
  uint64_t fallbacks = 0;        // of those, fetches that tried RDMA first
  uint64_t sessions_opened = 0;  // RC: PREPARE + READY completed; DC: targets created
  uint64_t sessions_fenced = 0;  // sessions / targets dropped by a fence (failure, timeout, cancel)
  uint64_t failed = 0;           // fetches that ended with an error
};

}  // namespace reelfs::rdmaio

// ChannelCounters: what an RDMA DataChannel reports about one endpoint, whatever its transport
// (RC hipobj-rc-v2, cuObject DC): bytes and requests per path, fallbacks, sessions, failures, for
// reads (fetches) and, where the channel uploads (RcChannel::Put), for writes.
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
  uint64_t fallbacks = 0;        // of those (and of the HTTP PUTs), requests that tried RDMA first
  uint64_t sessions_opened = 0;  // RC: PREPARE + READY completed; DC: targets created
  uint64_t sessions_fenced = 0;  // sessions / targets dropped by a fence (failure, timeout, cancel)
  uint64_t failed = 0;           // fetches and puts that ended with an error
  // Uploads (PUT / UploadPart): payloads the server RDMA-read out of our window, and payloads
  // sent as HTTP bodies (the endpoint declined, or the RDMA attempt failed: see `fallbacks`).
  uint64_t rdma_put_requests = 0;
  uint64_t rdma_put_bytes = 0;
  uint64_t http_put_requests = 0;
  uint64_t http_put_bytes = 0;
};

}  // namespace reelfs::rdmaio

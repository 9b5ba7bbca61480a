// RdmaHook: how S3Service hands S3-over-RDMA requests to the gateway's RDMA server
// (gateway/rdma/rc_server.h), without the S3 API code depending on rdma-core.
//
// S3Service calls it only for authenticated requests, and only when the gateway runs with RDMA
// enabled (`--rdma`):
//   * Control: POST /.hipobj-rc/{prepare,ready,cancel} (".hipobj-rc" is not a valid bucket
//     name, so no bucket can shadow the route);
//   * ServeGet: a GetObject that carries x-amz-rdma-token, with the plain answer already built
//     (status, headers, the file range as body). Error answers (404, 403 InvalidObjectState, 412,
//     416, ...) are passed in too, and come back unchanged: they are not RDMA's business.
// Both may return a Response whose `deferred` is set: the transfer runs off the io thread and the
// HTTP answer follows the completed RDMA WRITE (docs/protocols/rdma.md §6).
//
// Thread-safety: called from every io thread at once.
#pragma once

#include <string_view>

#include "gateway/http/types.h"

namespace reelfs::gateway {

class RdmaHook {
 public:
  virtual ~RdmaHook() = default;
  // `op` is the path segment after "/.hipobj-rc/": "prepare", "ready", "cancel" (else 404).
  virtual http::Response Control(const http::Request& request, std::string_view op) = 0;
  virtual http::Response ServeGet(const http::Request& request, http::Response plain) = 0;
};

}  // namespace reelfs::gateway

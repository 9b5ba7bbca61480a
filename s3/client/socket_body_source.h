// SocketBodySource: the BodySource (s3/body_stream.h) of an S3Client, over plain-http endpoints.
//
// One TCP connection per stream (a stream is long: the rest of a large object), closed with it;
// the endpoint comes from the client's EndpointSet (its health view, its in-flight count).
// Thread-safety: Open may be called from any thread.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "s3/body_stream.h"
#include "s3/client/raw_http.h"  // ParseResponseHead, which this receiver's tests use
#include "s3/client/transport.h"

namespace reelfs::s3 {

// nullptr when some endpoint is not plain http (a TLS body cannot be spliced from its socket) or
// a proxy is configured for libcurl (raw_http.h ConfiguredProxyVariable).
std::unique_ptr<BodySource> CreateSocketBodySource(const TransportOptions& options);

}  // namespace reelfs::s3

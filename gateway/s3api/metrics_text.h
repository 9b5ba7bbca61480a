// The gateway's Prometheus exposition, served at GET /metrics to requests that carry no
// signature (docs/gateway.md "Metrics"): HTTP requests, bytes and latency (HttpMetrics), the
// simulated tape library (recalls by outcome, pending, bytes, mounts, drive seconds by state,
// archive writes), the archive (recalls submitted, joined and in flight, archived, released and
// restored bytes) and the multipart expiry. The same numbers as GET /_reelfs/admin/metrics, named
// and typed for Prometheus.
//
// Thread-safety: as the documents it reads (Archive and Library are thread-safe).
#pragma once

#include <string>

#include "gateway/s3api/http_metrics.h"
#include "gateway/s3api/internal.h"

namespace reelfs::gateway::s3api {

std::string PrometheusText(const Context& ctx, const HttpMetrics& http);

}  // namespace reelfs::gateway::s3api

#include "gateway/s3api/http_metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace reelfs::gateway {

void HttpMetrics::Record(std::string_view method, int status, uint64_t bytes_in, uint64_t bytes_out,
                         double seconds) {
  bytes_in_.fetch_add(bytes_in, std::memory_order_relaxed);
  bytes_out_.fetch_add(bytes_out, std::memory_order_relaxed);
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  duration_us_.fetch_add(static_cast<uint64_t>(std::llround(std::max(seconds, 0.0) * 1e6)),
                         std::memory_order_relaxed);
  MutexLock lock(mu_);
  ++requests_[{std::string(method), status}];
}

void HttpMetrics::Write(PromText& out) const {
  std::map<std::pair<std::string, int>, uint64_t> requests;
  {
    MutexLock lock(mu_);
    requests = requests_;
  }
  out.Family("reelfs_gateway_http_requests_total", "counter",
             "HTTP requests answered, by method and status code");
  for (const auto& [key, n] : requests) {
    out.Sample("reelfs_gateway_http_requests_total",
               {{"method", key.first}, {"code", std::to_string(key.second)}},
               static_cast<double>(n));
  }
  out.Counter("reelfs_gateway_http_received_bytes_total", "request body bytes received",
              static_cast<double>(bytes_in_.load(std::memory_order_relaxed)));
  out.Counter("reelfs_gateway_http_sent_bytes_total", "response body bytes sent",
              static_cast<double>(bytes_out_.load(std::memory_order_relaxed)));
  const std::string name = "reelfs_gateway_http_request_duration_seconds";
  out.Family(name, "histogram", "from the request line to the last byte of the answer");
  std::array<uint64_t, kBuckets.size() + 1> counts{};
  for (size_t b = 0; b < counts.size(); ++b) {
    counts[b] = buckets_[b].load(std::memory_order_relaxed);
  }
  out.HistogramSamples(name, {}, kBuckets, counts,
                       static_cast<double>(duration_us_.load(std::memory_order_relaxed)) / 1e6);
}

}  // namespace reelfs::gateway

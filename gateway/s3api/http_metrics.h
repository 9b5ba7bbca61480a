// HttpMetrics: the gateway's per-request counters for its Prometheus exposition: requests by
// method and status code, bytes received and sent, and a histogram of request durations (from
// the request line to the last byte written). Fed by S3Service::Finished, which the HTTP server
// calls once per answered request.
//
// Thread-safety: Record and Write may be called from any thread concurrently (a mutex guards the
// per-(method, code) map; the rest are atomics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "common/mutex.h"
#include "common/prom_text.h"
#include "common/thread_annotations.h"

namespace reelfs::gateway {

class HttpMetrics {
 public:
  void Record(std::string_view method, int status, uint64_t bytes_in, uint64_t bytes_out,
              double seconds) EXCLUDES(mu_);
  // reelfs_gateway_http_requests_total, _received_bytes_total, _sent_bytes_total,
  // _request_duration_seconds.
  void Write(PromText& out) const EXCLUDES(mu_);

  // Upper bounds of the duration histogram's buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};

 private:
  mutable Mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_ GUARDED_BY(mu_);
  std::atomic<uint64_t> bytes_in_{0};
  std::atomic<uint64_t> bytes_out_{0};
  std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets_{};  // the last: above all
  std::atomic<uint64_t> duration_us_{0};                              // the sum, microseconds
};

}  // namespace reelfs::gateway

// OpStats: per FUSE operation, how many requests were answered, how many with an error, and how
// long they took from the request's arrival to its answer (a latency histogram), for the mount's
// Prometheus exposition (`reelfs mount --metrics-listen`). Every Reply records itself once, when
// it is answered (reply.h), so an interrupted request counts as an error (EINTR).
//
// The operations are a fixed table (the names ops.cc gives RequestInfo::op); a name not in it is
// counted as "other". Recording is a few relaxed atomic increments, no lock.
//
// Thread-safety: Record and WriteProm may be called from any thread at any time.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/prom_text.h"

namespace reelfs::fuse {

class OpStats {
 public:
  // Bucket upper bounds in seconds: 50 µs (a cached getattr) to 60 s (a read waiting for tape).
  static constexpr std::array<double, 18> kBounds = {50e-6,  100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3,
                                                     5e-3,   10e-3,  25e-3,  50e-3,  100e-3, 250e-3,
                                                     500e-3, 1.0,    2.5,    5.0,    10.0,   60.0};

  void Record(std::string_view op, std::chrono::nanoseconds elapsed, bool failed);

  // reelfs_fuse_requests_total{op}, reelfs_fuse_request_errors_total{op} and
  // reelfs_fuse_request_duration_seconds{op} (histogram); operations never seen are left out.
  void WriteProm(PromText& out) const;

 private:
  struct Slot {
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> sum_ns{0};
    // One per bound, not cumulative, and the last for the requests above every bound: their
    // sum is the request count.
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets{};
  };
  static constexpr size_t kSlots = 40;
  std::array<Slot, kSlots> slots_;
};

}  // namespace reelfs::fuse

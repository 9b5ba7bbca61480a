// FaultInjector: the HTTP-level half of a fault scenario (docs/gateway.md "Fault scenarios"):
// 503 SlowDown (or another S3 error) on a share of an operation's requests or on its nth one,
// slow answers, and GET bodies cut mid-way (the connection is closed after N bytes). Library
// faults go to tape::Library::Inject (Archive::ScheduleFaults).
//
// Thread-safety: Decide may be called from every io thread (one mutex around the counters and
// the seeded generator).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "gateway/http/types.h"
#include "gateway/options.h"

namespace reelfs::gateway {

class FaultInjector {
 public:
  explicit FaultInjector(FaultScenario scenario);

  struct Decision {
    std::string error;  // S3 error code to answer instead; "" none
    std::chrono::milliseconds delay{0};
    std::optional<uint64_t> reset_after;  // GET body: close the connection after this many bytes
  };
  // Counts the request against every rule for `op` and returns what to do with it.
  Decision Decide(std::string_view op);
  // Per rule: its op, the requests it matched and the times it fired.
  Json MetricsDocument();

 private:
  FaultScenario scenario_;
  Mutex mu_;
  std::vector<uint64_t> seen_ GUARDED_BY(mu_);   // matching requests per rule
  std::vector<uint64_t> fired_ GUARDED_BY(mu_);  // times each rule fired
  std::mt19937_64 rng_ GUARDED_BY(mu_);
};

// Wraps a response body: serves `limit` bytes of it, then fails (the server closes the
// connection mid-body, which a client sees as a reset / short read).
std::unique_ptr<http::BodySource> CutAfter(std::unique_ptr<http::BodySource> inner, uint64_t limit);

}  // namespace reelfs::gateway

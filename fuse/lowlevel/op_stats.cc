#include "fuse/lowlevel/op_stats.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace reelfs::fuse {
namespace {

// The names ops.cc gives RequestInfo::op, in its order, then "other" for anything else. The
// table is small, so a linear scan of string_views costs less than the reply it is counted for.
constexpr std::string_view kOps[] = {
    "lookup",          "forget",      "forget_multi", "getattr",  "access",    "opendir",
    "readdir",         "readdirplus", "releasedir",   "open",     "read",      "release",
    "statfs",          "getxattr",    "listxattr",    "setxattr", "create",    "write",
    "flush",           "fsync",       "setattr",      "mkdir",    "unlink",    "rmdir",
    "rename",          "mknod",       "symlink",      "link",     "fallocate", "removexattr",
    "copy_file_range", "other"};
constexpr size_t kOther = std::size(kOps) - 1;

size_t SlotOf(std::string_view op) {
  for (size_t i = 0; i < kOther; ++i) {
    if (kOps[i] == op) return i;
  }
  return kOther;
}

}  // namespace

static_assert(std::size(kOps) <= 40, "OpStats::kSlots is too small for the table");

void OpStats::Record(std::string_view op, std::chrono::nanoseconds elapsed, bool failed) {
  Slot& s = slots_[SlotOf(op)];
  const uint64_t ns = elapsed.count() > 0 ? static_cast<uint64_t>(elapsed.count()) : 0;
  if (failed) s.errors.fetch_add(1, std::memory_order_relaxed);
  s.sum_ns.fetch_add(ns, std::memory_order_relaxed);
  // The first bound >= the latency, compared in whole nanoseconds so a latency exactly on a
  // bound lands in that bound's bucket whatever the rounding of ns * 1e-9.
  const auto at_or_above =
      std::lower_bound(kBounds.begin(), kBounds.end(), ns, [](double bound, uint64_t v) {
        return static_cast<uint64_t>(std::llround(bound * 1e9)) < v;
      });
  const size_t b = static_cast<size_t>(at_or_above - kBounds.begin());
  s.buckets[b].fetch_add(1, std::memory_order_relaxed);
}

void OpStats::WriteProm(PromText& out) const {
  // Each slot read once, so that an operation's three families agree with each other.
  struct Seen {
    std::string op;
    uint64_t count = 0, errors = 0, sum_ns = 0;
    std::array<uint64_t, kBounds.size() + 1> buckets{};
  };
  std::vector<Seen> seen;
  for (size_t i = 0; i < std::size(kOps); ++i) {
    const Slot& s = slots_[i];
    Seen v{.op = std::string(kOps[i])};
    for (size_t b = 0; b < v.buckets.size(); ++b) {
      v.buckets[b] = s.buckets[b].load(std::memory_order_relaxed);
      v.count += v.buckets[b];
    }
    v.sum_ns = s.sum_ns.load(std::memory_order_relaxed);
    v.errors = std::min(v.count, s.errors.load(std::memory_order_relaxed));
    if (v.count > 0) seen.push_back(std::move(v));
  }
  out.Family("reelfs_fuse_requests_total", "counter", "FUSE requests answered, by operation");
  for (const Seen& v : seen) {
    out.Sample("reelfs_fuse_requests_total", {{"op", v.op}}, static_cast<double>(v.count));
  }
  out.Family("reelfs_fuse_request_errors_total", "counter",
             "FUSE requests answered with an error (EINTR included), by operation");
  for (const Seen& v : seen) {
    out.Sample("reelfs_fuse_request_errors_total", {{"op", v.op}}, static_cast<double>(v.errors));
  }
  const std::string_view hist = "reelfs_fuse_request_duration_seconds";
  out.Family(hist, "histogram", "time from a FUSE request's arrival to its answer, by operation");
  for (const Seen& v : seen) {
    out.HistogramSamples(hist, {{"op", v.op}}, kBounds, v.buckets,
                         static_cast<double>(v.sum_ns) * 1e-9);
  }
}

}  // namespace reelfs::fuse

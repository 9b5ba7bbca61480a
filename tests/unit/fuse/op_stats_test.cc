#include "fuse/lowlevel/op_stats.h"

#include <chrono>
#include <string>

#include <doctest/doctest.h>

namespace reelfs::fuse {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST_SUITE("fuse") {
  TEST_CASE("OpStats: counts, errors and a latency histogram per operation") {
    OpStats stats;
    stats.Record("read", microseconds(40), false);  // first bucket (50 µs)
    stats.Record("read", milliseconds(3), false);   // (2.5 ms, 5 ms]
    stats.Record("read", seconds(90), true);        // above 60 s: +Inf only
    stats.Record("lookup", microseconds(100), true);
    stats.Record("no_such_op", microseconds(1), false);
    PromText out;
    stats.WriteProm(out);
    const std::string& t = out.text();
    CHECK(Has(t, R"(reelfs_fuse_requests_total{op="read"} 3)"));
    CHECK(Has(t, R"(reelfs_fuse_requests_total{op="lookup"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_requests_total{op="other"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_request_errors_total{op="read"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_request_errors_total{op="lookup"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_bucket{op="read",le="5e-05"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_bucket{op="read",le="0.0025"} 1)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_bucket{op="read",le="0.005"} 2)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_bucket{op="read",le="60"} 2)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_bucket{op="read",le="+Inf"} 3)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_count{op="read"} 3)"));
    CHECK(Has(t, R"(reelfs_fuse_request_duration_seconds_sum{op="read"} 90.00304)"));
    // A latency exactly on a bound falls in that bound's bucket (le is "less or equal").
    OpStats edge;
    edge.Record("getattr", microseconds(100), false);
    PromText e;
    edge.WriteProm(e);
    CHECK(
        Has(e.text(), R"(reelfs_fuse_request_duration_seconds_bucket{op="getattr",le="5e-05"} 0)"));
    CHECK(Has(e.text(),
              R"(reelfs_fuse_request_duration_seconds_bucket{op="getattr",le="0.0001"} 1)"));
    // Operations never seen are left out.
    CHECK(t.find(R"(op="mkdir")") == std::string::npos);
  }
}

}  // namespace
}  // namespace reelfs::fuse

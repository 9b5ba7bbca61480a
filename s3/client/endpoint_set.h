// EndpointSet: the S3 endpoints one client spreads its requests over (several gateway front ends
// over one archive), with each one's health, so a request goes to a healthy one and a failed
// attempt is retried on another.
//
// Rule (docs/s3-client.md "Several endpoints"): a new attempt goes to the healthy endpoint with the
// fewest attempts in flight (ties: the next in turn); the endpoint the attempt before failed on is
// avoided while any other is healthy. An attempt that fails to connect, times out or gets a 5xx
// other than 503 SlowDown marks its endpoint down for a backoff (500 ms doubling to 30 s); the
// transport then sends it an active probe (HEAD /: any HTTP answer means it is back) when the
// backoff ends, and requests go to it again once a probe or a request succeeds. When every
// endpoint is down, attempts go to the one whose backoff ends first (requests never wait on the
// set itself; the retry policy bounds how long they keep trying).
//
// Thread-safety: every member is safe to call from any thread (one mutex; the client's event loops
// share one set). Times are passed in (steady_clock), so tests drive it without sleeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "s3/client/request_target.h"

namespace reelfs::s3 {

struct EndpointStats {
  std::string url;
  bool up = true;
  uint64_t requests = 0;  // attempts sent to it (probes not counted)
  uint64_t bytes = 0;     // response and request body bytes moved by those attempts
  uint64_t errors = 0;    // attempts that failed there (any reason)
  uint64_t downs = 0;     // times it was marked down
  uint64_t probes = 0;    // active probes sent while it was down
  int64_t in_flight = 0;  // attempts in flight now
};

class EndpointSet {
 public:
  using Time = std::chrono::steady_clock::time_point;
  struct Options {
    std::chrono::milliseconds backoff_min{500};
    std::chrono::milliseconds backoff_max{30'000};
  };
  enum class Outcome { kOk, kEndpointFailure, kOtherError, kCancelled };

  // `urls`: "http(s)://host[:port][/path]" each (kInvalidArgument names a bad one), at least one.
  static Result<std::unique_ptr<EndpointSet>> Create(const std::vector<std::string>& urls,
                                                     Options options);
  // One endpoint already parsed (a client given a single URL).
  static std::unique_ptr<EndpointSet> Single(Endpoint endpoint);
  // A comma-separated list ("http://a:1,http://b:2") into its URLs, blanks trimmed, empties out.
  static std::vector<std::string> SplitList(std::string_view list);

  size_t size() const { return endpoints_.size(); }
  const Endpoint& endpoint(size_t i) const { return endpoints_[i]; }

  // The endpoint for a new attempt (counted in flight until Finish). `avoid`: the one the
  // previous attempt of the same request failed on.
  size_t Acquire(std::optional<size_t> avoid = std::nullopt);
  // The endpoint for an attempt pinned to `i` (an S3-over-RDMA GET must reach the gateway that
  // holds its session), counted in flight like any; its health decides nothing here.
  size_t AcquireAt(size_t i);
  // The index of `url` as given to Create (nullopt: not one of them).
  std::optional<size_t> IndexOf(std::string_view url) const;
  // Whether endpoint i is up now (not marked down).
  bool Up(size_t i) const;
  // The attempt on `i` ended. kEndpointFailure: connect error, timeout, 5xx (not SlowDown);
  // kOtherError: the server answered with an error; kCancelled: says nothing about its health.
  // With a single endpoint nothing is ever marked down (there is nowhere else to go).
  void Finish(size_t i, Outcome outcome, uint64_t bytes, Time now);
  // True if some endpoint other than `i` is up: a retry can go there at once.
  bool OtherUp(size_t i) const;

  // Down endpoints whose backoff ended and that no probe is out for: each is marked probing
  // (one caller probes it). The earliest future probe time, if any, goes to `*next`.
  std::vector<size_t> TakeDueProbes(Time now, std::optional<Time>* next);
  void ProbeResult(size_t i, bool alive, Time now);

  std::vector<EndpointStats> Stats() const;

 private:
  struct State {
    bool up = true;
    bool probing = false;
    Time down_until{};
    std::chrono::milliseconds backoff{0};
    EndpointStats stats;
  };
  EndpointSet(std::vector<Endpoint> endpoints, std::vector<std::string> urls, Options options);
  void MarkDownLocked(size_t i, Time now) REQUIRES(mu_);
  void MarkUpLocked(size_t i) REQUIRES(mu_);

  const std::vector<Endpoint> endpoints_;
  const Options options_;
  mutable Mutex mu_;
  std::vector<State> state_ GUARDED_BY(mu_);
  size_t next_ GUARDED_BY(mu_) = 0;  // round-robin start among equals
};

}  // namespace reelfs::s3

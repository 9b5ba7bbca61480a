// RetryPolicy: which failed attempts are tried again and how long to wait first.
//
// Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff and Jitter"):
// the delay before retry n (n = 1 for the first retry) is uniform in [0, min(cap, base * 2^(n-1))].
// Retried: connection-level failures (couldn't connect, reset, partial body, timeouts), HTTP 5xx,
// 429 and the throttling/timeout S3 codes (SlowDown, RequestTimeout, ...) whatever their status.
// Never retried: any other 4xx, cancellation, local errors (buffer overflow, sink failure).
//
// The policy is pure: no clock, no randomness of its own (the jitter source is a parameter), so
// its decisions are unit-tested exactly (tests/unit/s3client/retry_policy_test.cc).
//
// Thread-safety: immutable after construction; safe to share.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace reelfs::s3 {

struct RetryOptions {
  int max_attempts = 5;                   // first try included; 1 disables retries
  std::chrono::milliseconds base{100};    // upper bound of the first retry's delay
  std::chrono::milliseconds cap{20'000};  // no delay is longer than this
};

// What one attempt ended with, as far as retrying cares.
struct AttemptOutcome {
  enum class Kind {
    kHttpResponse,     // a complete response arrived; see http_status / s3_code
    kConnectionError,  // couldn't resolve/connect, reset, partial body, nothing received
    kTimeout,          // connect, idle (low-speed) or total timeout
    kLocalError,       // cancelled, buffer overflow, sink error, TLS setup: never retried
  };
  Kind kind = Kind::kHttpResponse;
  int http_status = 0;
  std::string s3_code;
};

class RetryPolicy {
 public:
  // Uniform random number in [0, 1); the default is a thread-local std::mt19937_64.
  using JitterSource = std::function<double()>;

  explicit RetryPolicy(RetryOptions options, JitterSource jitter = {});

  // Whether the outcome is of a retryable kind (ignores the attempt count).
  static bool IsRetryableOutcome(const AttemptOutcome& outcome);

  // Whether attempt number `attempt` (1-based) that ended with `outcome` is tried again.
  bool ShouldRetry(const AttemptOutcome& outcome, int attempt) const;

  // Largest delay allowed before retry `retry` (1-based): min(cap, base * 2^(retry-1)).
  std::chrono::milliseconds MaxDelay(int retry) const;
  // A jittered delay in [0, MaxDelay(retry)].
  std::chrono::milliseconds Delay(int retry) const;

  const RetryOptions& options() const { return options_; }

 private:
  RetryOptions options_;
  JitterSource jitter_;
};

}  // namespace reelfs::s3

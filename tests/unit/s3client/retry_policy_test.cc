#include "s3/client/retry_policy.h"

#include <doctest/doctest.h>

using namespace reelfs::s3;
using namespace std::chrono_literals;
using Kind = AttemptOutcome::Kind;

namespace {
AttemptOutcome Http(int status, std::string code = {}) {
  return {Kind::kHttpResponse, status, std::move(code)};
}
}  // namespace

TEST_CASE("retryable: 5xx, 429, throttling codes, connection errors, timeouts") {
  CHECK(RetryPolicy::IsRetryableOutcome(Http(500)));
  CHECK(RetryPolicy::IsRetryableOutcome(Http(502)));
  CHECK(RetryPolicy::IsRetryableOutcome(Http(503, "SlowDown")));
  CHECK(RetryPolicy::IsRetryableOutcome(Http(429)));
  CHECK(RetryPolicy::IsRetryableOutcome(Http(400, "RequestTimeout")));
  CHECK(RetryPolicy::IsRetryableOutcome(Http(400, "SlowDown")));
  CHECK(RetryPolicy::IsRetryableOutcome({Kind::kConnectionError, 0, ""}));
  CHECK(RetryPolicy::IsRetryableOutcome({Kind::kTimeout, 0, ""}));
}

TEST_CASE("never retried: other 4xx and local errors") {
  for (int status : {400, 401, 403, 404, 405, 409, 412, 416}) {
    CHECK_FALSE(RetryPolicy::IsRetryableOutcome(Http(status)));
  }
  CHECK_FALSE(RetryPolicy::IsRetryableOutcome(Http(403, "SignatureDoesNotMatch")));
  CHECK_FALSE(RetryPolicy::IsRetryableOutcome(Http(404, "NoSuchKey")));
  CHECK_FALSE(RetryPolicy::IsRetryableOutcome(Http(403, "AccessDenied")));
  CHECK_FALSE(RetryPolicy::IsRetryableOutcome({Kind::kLocalError, 0, ""}));
}

TEST_CASE("attempt cap") {
  RetryPolicy policy({.max_attempts = 3, .base = 100ms, .cap = 1s});
  CHECK(policy.ShouldRetry(Http(503), 1));
  CHECK(policy.ShouldRetry(Http(503), 2));
  CHECK_FALSE(policy.ShouldRetry(Http(503), 3));
  CHECK_FALSE(policy.ShouldRetry(Http(404), 1));
  RetryPolicy single({.max_attempts = 1});
  CHECK_FALSE(single.ShouldRetry(Http(503), 1));
  RetryPolicy nonsense({.max_attempts = 0});  // clamped to one attempt
  CHECK_FALSE(nonsense.ShouldRetry(Http(503), 1));
}

TEST_CASE("backoff bounds double up to the cap") {
  RetryPolicy policy({.max_attempts = 20, .base = 100ms, .cap = 1500ms});
  CHECK(policy.MaxDelay(1) == 100ms);
  CHECK(policy.MaxDelay(2) == 200ms);
  CHECK(policy.MaxDelay(3) == 400ms);
  CHECK(policy.MaxDelay(4) == 800ms);
  CHECK(policy.MaxDelay(5) == 1500ms);
  CHECK(policy.MaxDelay(60) == 1500ms);  // no overflow far out
}

TEST_CASE("full jitter: the delay spans [0, max] by the jitter source") {
  double u = 0.0;
  RetryPolicy policy({.max_attempts = 5, .base = 100ms, .cap = 20s}, [&] { return u; });
  CHECK(policy.Delay(3) == 0ms);
  u = 0.5;
  CHECK(policy.Delay(3) == 200ms);
  u = 0.999999;
  CHECK(policy.Delay(3) <= 400ms);
  CHECK(policy.Delay(3) >= 399ms);
  u = 7.0;  // a broken source is clamped
  CHECK(policy.Delay(3) == 400ms);
}

TEST_CASE("default jitter stays within bounds") {
  RetryPolicy policy({.max_attempts = 5, .base = 50ms, .cap = 300ms});
  for (int retry = 1; retry < 8; ++retry) {
    for (int i = 0; i < 100; ++i) {
      const auto d = policy.Delay(retry);
      CHECK(d >= 0ms);
      CHECK(d <= policy.MaxDelay(retry));
    }
  }
}

#include "s3/client/retry_policy.h"

#include <algorithm>
#include <array>
#include <random>
#include <string_view>

namespace reelfs::s3 {
namespace {

// S3 error codes that mean "try again later" even when they come with a 4xx status
// (RequestTimeout is a 400; throttling codes may come as 503 or 400 depending on the server).
constexpr std::array<std::string_view, 7> kRetryableCodes = {
    "SlowDown",         "RequestTimeout", "Throttling",         "ThrottlingException",
    "RequestThrottled", "InternalError",  "ServiceUnavailable",
};

double DefaultJitter() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

}  // namespace

RetryPolicy::RetryPolicy(RetryOptions options, JitterSource jitter)
    : options_(options), jitter_(jitter ? std::move(jitter) : JitterSource(DefaultJitter)) {
  options_.max_attempts = std::max(1, options_.max_attempts);
  options_.base = std::max(std::chrono::milliseconds(0), options_.base);
  options_.cap = std::max(options_.base, options_.cap);
}

bool RetryPolicy::IsRetryableOutcome(const AttemptOutcome& outcome) {
  switch (outcome.kind) {
    case AttemptOutcome::Kind::kConnectionError:
    case AttemptOutcome::Kind::kTimeout:
      return true;
    case AttemptOutcome::Kind::kLocalError:
      return false;
    case AttemptOutcome::Kind::kHttpResponse:
      break;
  }
  if (std::find(kRetryableCodes.begin(), kRetryableCodes.end(), outcome.s3_code) !=
      kRetryableCodes.end()) {
    return true;
  }
  return outcome.http_status >= 500 || outcome.http_status == 429;
}

bool RetryPolicy::ShouldRetry(const AttemptOutcome& outcome, int attempt) const {
  return attempt < options_.max_attempts && IsRetryableOutcome(outcome);
}

std::chrono::milliseconds RetryPolicy::MaxDelay(int retry) const {
  // Doubling stops at the cap, so the shift never overflows.
  auto delay = options_.base;
  for (int i = 1; i < retry && delay < options_.cap; ++i) delay *= 2;
  return std::min(delay, options_.cap);
}

std::chrono::milliseconds RetryPolicy::Delay(int retry) const {
  const double u = std::clamp(jitter_(), 0.0, 1.0);
  return std::chrono::milliseconds(
      static_cast<int64_t>(u * static_cast<double>(MaxDelay(retry).count())));
}

}  // namespace reelfs::s3

#include "s3/client/refreshing_credentials.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/log.h"

namespace reelfs::s3 {

using std::chrono::system_clock;

RefreshingCredentials::RefreshingCredentials(TemporaryCredentials first, Fetch fetch,
                                             std::string source, Options options)
    : fetch_(std::move(fetch)),
      source_(std::move(source)),
      options_(options),
      current_(std::move(first)),
      thread_([this] { Run(); }) {}

RefreshingCredentials::~RefreshingCredentials() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Credentials RefreshingCredentials::Current() const {
  MutexLock lock(mu_);
  return current_.credentials;
}

std::optional<system_clock::time_point> RefreshingCredentials::expiration() const {
  MutexLock lock(mu_);
  return current_.expiration;
}

uint64_t RefreshingCredentials::refreshes() const {
  MutexLock lock(mu_);
  return refreshes_;
}

uint64_t RefreshingCredentials::failures() const {
  MutexLock lock(mu_);
  return failures_;
}

void RefreshingCredentials::Run() {
  auto last_fetch = system_clock::now();
  bool failing = false;
  MutexLock lock(mu_);
  while (!stop_) {
    if (!current_.expiration) return;  // long-term keys now: nothing left to refresh
    auto due = *current_.expiration - options_.refresh_before;
    if (failing) due = std::min(due, system_clock::now() + options_.retry_every);
    due = std::max(due, last_fetch + (failing ? options_.retry_every : options_.min_interval));
    if (wake_.wait_until(lock, due, [this]() REQUIRES(mu_) { return stop_; })) return;
    const auto expires = *current_.expiration;
    lock.unlock();
    // The fetch runs unlocked: requests keep signing with the current credentials meanwhile.
    Result<TemporaryCredentials> got = fetch_();
    last_fetch = system_clock::now();
    lock.lock();
    if (got.ok()) {
      current_ = std::move(*got);
      ++refreshes_;
      if (failing) REELFS_LOG_INFO("s3", "credentials from {} refreshed again", source_);
      failing = false;
      continue;
    }
    ++failures_;
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(expires - last_fetch);
    // One warning per failing stretch, not one per retry.
    if (!failing) {
      REELFS_LOG_WARN(
          "s3",
          "refreshing credentials from {} failed ({}); the current ones {} {} s; "
          "retrying every {} s",
          source_, got.status().message(), left.count() >= 0 ? "expire in" : "expired",
          std::abs(left.count()),
          std::chrono::duration_cast<std::chrono::seconds>(options_.retry_every).count());
    }
    failing = true;
  }
}

}  // namespace reelfs::s3

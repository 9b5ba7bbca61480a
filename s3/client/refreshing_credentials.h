// Temporary credentials kept fresh: the holder of what the credential chain (aws_config.h)
// fetched from STS, a container endpoint, EC2 instance metadata or a credential_process, and of
// how to fetch them again.
//
// A background thread refetches `refresh_before` (5 min, as the SDKs) ahead of the expiration,
// so a request never waits for STS and a mount never needs a remount. A failed refresh keeps
// the credentials in hand (they are still valid until they expire), logs one warning naming the
// source (never a secret) and retries every `retry_every`; once they have expired, requests fail
// with ExpiredToken (EACCES on the mount) until a refresh succeeds. Refreshes are at least
// `min_interval` apart, so an endpoint that hands out credentials already close to expiry is not
// hammered.
//
// Thread-safety: Current() and the counters may be called from any thread at any time; the
// destructor stops the thread and waits for a fetch in progress (bounded by the fetch's own
// timeouts).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/result.h"
#include "s3/protocol/credential_documents.h"

namespace reelfs::s3 {

class RefreshingCredentials {
 public:
  using Fetch = std::function<Result<TemporaryCredentials>()>;
  struct Options {
    std::chrono::milliseconds refresh_before{std::chrono::minutes(5)};
    std::chrono::milliseconds retry_every{std::chrono::seconds(10)};
    std::chrono::milliseconds min_interval{std::chrono::seconds(10)};
  };

  // `first` is what the chain already fetched (with an expiration: otherwise there is nothing
  // to refresh and no holder is needed); `source` names it in logs.
  RefreshingCredentials(TemporaryCredentials first, Fetch fetch, std::string source,
                        Options options);
  RefreshingCredentials(TemporaryCredentials first, Fetch fetch, std::string source)
      : RefreshingCredentials(std::move(first), std::move(fetch), std::move(source), Options{}) {}
  ~RefreshingCredentials();
  RefreshingCredentials(const RefreshingCredentials&) = delete;
  RefreshingCredentials& operator=(const RefreshingCredentials&) = delete;

  Credentials Current() const EXCLUDES(mu_);
  std::optional<std::chrono::system_clock::time_point> expiration() const EXCLUDES(mu_);
  const std::string& source() const { return source_; }
  uint64_t refreshes() const EXCLUDES(mu_);  // successful refetches
  uint64_t failures() const EXCLUDES(mu_);   // failed ones

 private:
  void Run() EXCLUDES(mu_);

  const Fetch fetch_;
  const std::string source_;
  const Options options_;
  mutable Mutex mu_;
  CondVar wake_;
  TemporaryCredentials current_ GUARDED_BY(mu_);
  uint64_t refreshes_ GUARDED_BY(mu_) = 0;
  uint64_t failures_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started after every member it reads exists
};

}  // namespace reelfs::s3

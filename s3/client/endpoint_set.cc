#include "s3/client/endpoint_set.h"

#include <algorithm>
#include <limits>

#include "common/log.h"

namespace reelfs::s3 {

namespace {
constexpr std::string_view kLog = "s3";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

std::vector<std::string> EndpointSet::SplitList(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view one = Trim(list.substr(0, comma));
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

Result<std::unique_ptr<EndpointSet>> EndpointSet::Create(const std::vector<std::string>& urls,
                                                         Options options) {
  if (urls.empty()) return Status::InvalidArgument("no S3 endpoint given");
  std::vector<Endpoint> endpoints;
  for (const std::string& url : urls) {
    auto parsed = ParseEndpoint(url);
    if (!parsed.ok()) return std::move(parsed).status().WithContext("endpoint " + url);
    if (parsed->host.empty()) return Status::InvalidArgument("endpoint " + url + " has no host");
    endpoints.push_back(std::move(parsed).value());
  }
  if (options.backoff_min.count() <= 0 || options.backoff_max < options.backoff_min) {
    return Status::InvalidArgument("endpoint backoff: need 0 < min <= max");
  }
  return std::unique_ptr<EndpointSet>(new EndpointSet(std::move(endpoints), urls, options));
}

std::unique_ptr<EndpointSet> EndpointSet::Single(Endpoint endpoint) {
  std::string url = endpoint.scheme + "://" + endpoint.host;
  if (endpoint.port != 0) url += ":" + std::to_string(endpoint.port);
  url += endpoint.base_path;
  std::vector<Endpoint> one;
  one.push_back(std::move(endpoint));
  return std::unique_ptr<EndpointSet>(new EndpointSet(std::move(one), {url}, Options{}));
}

EndpointSet::EndpointSet(std::vector<Endpoint> endpoints, std::vector<std::string> urls,
                         Options options)
    : endpoints_(std::move(endpoints)), options_(options), state_(endpoints_.size()) {
  for (size_t i = 0; i < urls.size(); ++i) state_[i].stats.url = urls[i];
}

size_t EndpointSet::Acquire(std::optional<size_t> avoid) {
  MutexLock lock(mu_);
  const size_t n = state_.size();
  size_t best = n;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (next_ + k) % n;
    const State& s = state_[i];
    if (!s.up) continue;
    if (avoid && *avoid == i && n > 1) continue;
    if (best == n || s.stats.in_flight < state_[best].stats.in_flight) best = i;
  }
  if (best == n && avoid && *avoid < n && state_[*avoid].up) best = *avoid;
  if (best == n) {
    // Every endpoint is down: the one expected back first (a request never waits on the set).
    for (size_t i = 0; i < n; ++i) {
      if (avoid && *avoid == i && n > 1) continue;
      if (best == n || state_[i].down_until < state_[best].down_until) best = i;
    }
    if (best == n) best = 0;
  }
  next_ = (best + 1) % n;
  State& s = state_[best];
  ++s.stats.in_flight;
  ++s.stats.requests;
  return best;
}

size_t EndpointSet::AcquireAt(size_t i) {
  MutexLock lock(mu_);
  State& s = state_[i];
  ++s.stats.in_flight;
  ++s.stats.requests;
  return i;
}

std::optional<size_t> EndpointSet::IndexOf(std::string_view url) const {
  MutexLock lock(mu_);
  for (size_t i = 0; i < state_.size(); ++i) {
    if (state_[i].stats.url == url) return i;
  }
  return std::nullopt;
}

bool EndpointSet::Up(size_t i) const {
  MutexLock lock(mu_);
  return state_[i].up;
}

void EndpointSet::Finish(size_t i, Outcome outcome, uint64_t bytes, Time now) {
  MutexLock lock(mu_);
  State& s = state_[i];
  --s.stats.in_flight;
  s.stats.bytes += bytes;
  switch (outcome) {
    case Outcome::kOk:
      MarkUpLocked(i);
      break;
    case Outcome::kEndpointFailure:
      ++s.stats.errors;
      MarkDownLocked(i, now);
      break;
    case Outcome::kOtherError:
      ++s.stats.errors;  // the server answered: it is alive
      MarkUpLocked(i);
      break;
    case Outcome::kCancelled:
      break;
  }
}

bool EndpointSet::OtherUp(size_t i) const {
  MutexLock lock(mu_);
  for (size_t k = 0; k < state_.size(); ++k) {
    if (k != i && state_[k].up) return true;
  }
  return false;
}

void EndpointSet::MarkDownLocked(size_t i, Time now) {
  if (state_.size() == 1) return;  // nowhere else to go: the retry policy alone decides
  State& s = state_[i];
  if (s.up) {
    s.up = false;
    s.backoff = options_.backoff_min;
    ++s.stats.downs;
    s.stats.up = false;
    REELFS_LOG_WARN(kLog, "endpoint {} is down; requests go to the others, probing it in {} ms",
                    s.stats.url, s.backoff.count());
  } else if (now >= s.down_until) {
    s.backoff = std::min(s.backoff * 2, options_.backoff_max);
  }
  s.down_until = now + s.backoff;
}

void EndpointSet::MarkUpLocked(size_t i) {
  State& s = state_[i];
  if (!s.up) REELFS_LOG_INFO(kLog, "endpoint {} is back", s.stats.url);
  s.up = true;
  s.stats.up = true;
  s.backoff = std::chrono::milliseconds(0);
}

std::vector<size_t> EndpointSet::TakeDueProbes(Time now, std::optional<Time>* next) {
  MutexLock lock(mu_);
  std::vector<size_t> due;
  for (size_t i = 0; i < state_.size(); ++i) {
    State& s = state_[i];
    if (s.up || s.probing) continue;
    if (s.down_until <= now) {
      s.probing = true;
      ++s.stats.probes;
      due.push_back(i);
    } else if (next != nullptr && (!*next || s.down_until < **next)) {
      *next = s.down_until;
    }
  }
  return due;
}

void EndpointSet::ProbeResult(size_t i, bool alive, Time now) {
  MutexLock lock(mu_);
  State& s = state_[i];
  s.probing = false;
  if (alive) {
    MarkUpLocked(i);
  } else {
    MarkDownLocked(i, now);
  }
}

std::vector<EndpointStats> EndpointSet::Stats() const {
  MutexLock lock(mu_);
  std::vector<EndpointStats> out;
  out.reserve(state_.size());
  for (const State& s : state_) out.push_back(s.stats);
  return out;
}

}  // namespace reelfs::s3

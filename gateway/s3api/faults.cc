#include "gateway/s3api/faults.h"

namespace reelfs::gateway {
namespace {

class CutSource : public http::BodySource {
 public:
  CutSource(std::unique_ptr<http::BodySource> inner, uint64_t limit)
      : inner_(std::move(inner)), left_(limit) {}
  Result<size_t> Read(std::span<char> buffer) override {
    if (left_ == 0) return Status::Unavailable("injected fault: connection reset mid-body");
    REELFS_ASSIGN_OR_RETURN(size_t n,
                            inner_->Read(buffer.subspan(
                                0, static_cast<size_t>(std::min<uint64_t>(buffer.size(), left_)))));
    left_ -= n;
    return n;
  }
  // No file_range: sendfile would bypass the cut.

 private:
  std::unique_ptr<http::BodySource> inner_;
  uint64_t left_;
};

}  // namespace

FaultInjector::FaultInjector(FaultScenario scenario)
    : scenario_(std::move(scenario)),
      seen_(scenario_.http.size(), 0),
      fired_(scenario_.http.size(), 0),
      rng_(scenario_.seed) {}

FaultInjector::Decision FaultInjector::Decide(std::string_view op) {
  Decision d;
  MutexLock lock(mu_);
  for (size_t i = 0; i < scenario_.http.size(); ++i) {
    const HttpFault& f = scenario_.http[i];
    if (f.op != "*" && f.op != op) continue;
    const uint64_t n = ++seen_[i];
    bool fire = false;
    if (f.nth > 0) {
      fire = n == f.nth;
    } else if (f.every > 0) {
      fire = n % f.every == 0;
    } else if (f.percent > 0) {
      fire = std::uniform_real_distribution<double>(0, 100)(rng_) < f.percent;
    }
    if (!fire) continue;
    ++fired_[i];
    if (!f.error.empty() && d.error.empty()) d.error = f.error;
    d.delay += f.delay;
    if (f.reset_after.has_value() && !d.reset_after.has_value()) d.reset_after = f.reset_after;
  }
  return d;
}

Json FaultInjector::MetricsDocument() {
  MutexLock lock(mu_);
  Json out = Json::array();
  for (size_t i = 0; i < scenario_.http.size(); ++i) {
    out.push_back(Json{{"op", scenario_.http[i].op}, {"matched", seen_[i]}, {"fired", fired_[i]}});
  }
  return out;
}

std::unique_ptr<http::BodySource> CutAfter(std::unique_ptr<http::BodySource> inner,
                                           uint64_t limit) {
  return std::make_unique<CutSource>(std::move(inner), limit);
}

}  // namespace reelfs::gateway

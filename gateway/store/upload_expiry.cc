#include "gateway/store/upload_expiry.h"

#include <algorithm>

#include "common/log.h"

namespace reelfs::gateway {
namespace {

// Keys in log lines: control characters replaced, long keys cut (as the S3 API's log lines).
std::string PrintableKey(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 256)) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7F ? '?' : c);
  }
  if (s.size() > 256) out += "...";
  return out;
}

}  // namespace

UploadExpiry::UploadExpiry(Store& store, std::chrono::nanoseconds expiry,
                           std::chrono::nanoseconds interval)
    : store_(store), expiry_(expiry), interval_(interval) {
  Sweep();
  thread_ = std::thread([this] { Run(); });
}

UploadExpiry::~UploadExpiry() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::chrono::nanoseconds UploadExpiry::DefaultInterval(std::chrono::nanoseconds expiry) {
  return std::clamp<std::chrono::nanoseconds>(expiry / 10, std::chrono::seconds(1),
                                              std::chrono::hours(1));
}

size_t UploadExpiry::Sweep() {
  const int64_t now = NowNs();
  auto expired = store_.ExpireUploads(now - expiry_.count());
  if (!expired.ok()) {
    REELFS_LOG_WARN("gateway", "multipart expiry sweep failed: {}", expired.status().ToString());
    return 0;
  }
  for (const Store::ExpiredUpload& e : *expired) {
    REELFS_LOG_INFO("gateway",
                    "expired multipart upload {} of {}/{}: initiated {} s ago, {} parts, {} bytes "
                    "freed",
                    e.upload.id, e.upload.bucket, PrintableKey(e.upload.key),
                    (now - e.upload.created_ns) / 1000000000, e.parts, e.bytes);
  }
  return expired->size();
}

void UploadExpiry::Run() {
  MutexLock lock(mu_);
  while (!stop_) {
    if (wake_.wait_for(lock, interval_, [&]() REQUIRES(mu_) { return stop_; })) break;
    lock.unlock();
    Sweep();
    lock.lock();
  }
}

}  // namespace reelfs::gateway

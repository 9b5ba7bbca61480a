#include "fuse/core/stale_uploads.h"

#include "common/log.h"
#include "s3/await.h"

namespace reelfs::fuse {
namespace {

constexpr std::string_view kSubject = "fuse.upload";

bool Stopped(const std::atomic<bool>* stop) {
  return stop != nullptr && stop->load(std::memory_order_relaxed);
}

}  // namespace

StaleUploadReport SweepStaleUploads(s3::ObjectStore& store, const StaleUploadOptions& options,
                                    const std::atomic<bool>* stop) {
  StaleUploadReport report;
  s3::ListMultipartUploadsRequest list;
  list.bucket = options.bucket;
  list.prefix = options.prefix;
  while (!Stopped(stop)) {
    Result<s3::ListMultipartUploadsPage> page = s3::Await<s3::ListMultipartUploadsPage>(
        [&](auto cb) { store.ListMultipartUploads(list, std::move(cb)); });
    if (!page.ok()) {
      report.status = page.status().WithContext("ListMultipartUploads");
      return report;
    }
    for (const s3::MultipartUploadInfo& u : page->uploads) {
      ++report.listed;
      if (u.initiated >= options.cutoff) {
        ++report.kept;
        continue;
      }
      if (Stopped(stop)) return report;
      Status st = s3::AwaitStatus([&](auto cb) {
        store.AbortMultipartUpload({options.bucket, u.key, u.upload_id}, std::move(cb));
      });
      // Gone meanwhile (completed or aborted by someone else): nothing left to clean.
      if (!st.ok() && st.detail().s3_code != "NoSuchUpload") {
        REELFS_LOG_DEBUG(kSubject, "abort of stale upload {} of {} failed: {}", u.upload_id, u.key,
                         st.ToString());
        if (report.status.ok()) report.status = st.WithContext("AbortMultipartUpload " + u.key);
        continue;
      }
      ++report.aborted;
      REELFS_LOG_DEBUG(kSubject, "aborted stale upload {} of s3://{}/{}", u.upload_id,
                       options.bucket, u.key);
    }
    // A server that says "truncated" without moving on would make this loop forever (the
    // parser refuses a missing marker; a repeated one is caught here).
    if (!page->is_truncated) break;
    if (page->next_key_marker == list.key_marker &&
        page->next_upload_id_marker == list.upload_id_marker) {
      report.status = Status::DataLoss(
          "ListMultipartUploads: the next page starts where this "
          "one did");
      break;
    }
    list.key_marker = page->next_key_marker;
    list.upload_id_marker = page->next_upload_id_marker;
  }
  return report;
}

std::unique_ptr<StaleUploadSweep> StaleUploadSweep::Start(std::shared_ptr<s3::ObjectStore> store,
                                                          StaleUploadOptions options) {
  std::unique_ptr<StaleUploadSweep> sweep(new StaleUploadSweep());
  sweep->store_ = std::move(store);
  sweep->thread_ = std::thread([s = sweep.get(), options = std::move(options)] {
    StaleUploadReport r = SweepStaleUploads(*s->store_, options, &s->stop_);
    if (!r.status.ok()) {
      REELFS_LOG_WARN(kSubject,
                      "stale multipart uploads under s3://{}/{}: {} aborted, then: {} (the mount "
                      "works; they stay until the next mount or the server's expiry)",
                      options.bucket, options.prefix, r.aborted, r.status.ToString());
    } else if (r.aborted > 0 || r.listed > 0) {
      REELFS_LOG_INFO(kSubject,
                      "stale multipart uploads under s3://{}/{}: {} aborted, {} kept (younger "
                      "than --abort-stale-uploads)",
                      options.bucket, options.prefix, r.aborted, r.kept);
    }
  });
  return sweep;
}

StaleUploadSweep::~StaleUploadSweep() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

}  // namespace reelfs::fuse

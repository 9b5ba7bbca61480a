#include "fuse/core/object_copy.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::fuse::detail {
namespace {

constexpr uint64_t kMaxParts = 10'000;  // S3's limit per multipart upload

// One multipart copy in progress: hands out parts to at most max_in_flight UploadPartCopy calls,
// keeps the first error, and completes or aborts once every part sent has answered.
class MultipartCopy : public std::enable_shared_from_this<MultipartCopy> {
 public:
  MultipartCopy(std::shared_ptr<s3::ObjectStore> store, CopyPlan plan,
                s3::Callback<CopyOutcome> done)
      : store_(std::move(store)),
        plan_(std::move(plan)),
        part_size_(CopyPartSize(plan_.source.size, plan_.part_size)),
        parts_((plan_.source.size + part_size_ - 1) / part_size_),
        done_(std::move(done)) {
    MutexLock lock(mu_);
    etags_.resize(parts_);
  }

  void Start() {
    s3::CreateMultipartUploadRequest req{plan_.bucket, plan_.dest_key, plan_.source.content_type,
                                         plan_.source.user_metadata};
    store_->CreateMultipartUpload(req, [self = shared_from_this()](Result<std::string> id) {
      if (!id.ok()) {
        return self->done_(
            std::move(id).status().WithContext("CreateMultipartUpload " + self->plan_.dest_key));
      }
      {
        MutexLock lock(self->mu_);
        self->upload_id_ = *id;
      }
      self->Pump();
    });
  }

 private:
  // Sends parts while there is room; the last answer completes or aborts.
  void Pump() EXCLUDES(mu_) {
    std::vector<s3::UploadPartCopyRequest> send;
    bool finish = false;
    {
      MutexLock lock(mu_);
      while (error_.ok() && next_ < parts_ &&
             in_flight_ < std::max<uint32_t>(1, plan_.max_in_flight)) {
        const uint64_t offset = next_ * part_size_;
        s3::UploadPartCopyRequest req;
        req.source_bucket = plan_.bucket;
        req.source_key = plan_.source_key;
        req.source_range = s3::ByteRange{offset, std::min(part_size_, plan_.source.size - offset)};
        req.source_if_match = plan_.source.etag;
        req.bucket = plan_.bucket;
        req.key = plan_.dest_key;
        req.upload_id = upload_id_;
        req.part_number = static_cast<int>(next_ + 1);
        send.push_back(std::move(req));
        ++next_;
        ++in_flight_;
      }
      finish = in_flight_ == 0 && (!error_.ok() || next_ == parts_) && !finishing_;
      if (finish) finishing_ = true;
    }
    for (s3::UploadPartCopyRequest& req : send) {
      const size_t index = static_cast<size_t>(req.part_number - 1);
      store_->UploadPartCopy(req, [self = shared_from_this(), index](Result<std::string> etag) {
        {
          MutexLock lock(self->mu_);
          --self->in_flight_;
          if (etag.ok()) {
            self->etags_[index] = std::move(*etag);
          } else if (self->error_.ok()) {
            self->error_ = std::move(etag).status().WithContext(
                "UploadPartCopy part " + std::to_string(index + 1) + " of " + self->plan_.dest_key);
          }
        }
        self->Pump();
      });
    }
    if (finish) Finish();
  }

  void Finish() EXCLUDES(mu_) {
    Status error;
    std::string upload_id;
    std::vector<s3::CompletedPart> parts;
    {
      MutexLock lock(mu_);
      error = error_;
      upload_id = upload_id_;
      for (size_t i = 0; i < etags_.size(); ++i) {
        parts.push_back(s3::CompletedPart{static_cast<int>(i + 1), etags_[i]});
      }
    }
    auto self = shared_from_this();
    if (!error.ok()) return Abort(upload_id, std::move(error));
    s3::CompleteMultipartUploadRequest req{plan_.bucket, plan_.dest_key, upload_id,
                                           std::move(parts)};
    store_->CompleteMultipartUpload(req, [self, upload_id](Result<std::string> etag) {
      if (!etag.ok()) {
        return self->Abort(upload_id, std::move(etag).status().WithContext(
                                          "CompleteMultipartUpload " + self->plan_.dest_key));
      }
      self->done_(CopyOutcome{std::move(*etag), static_cast<uint32_t>(self->parts_)});
    });
  }

  // Best effort: the error is the answer whatever the abort says (a gateway that is down keeps
  // the incomplete upload until its own cleanup, as for a failed write).
  void Abort(const std::string& upload_id, Status error) {
    store_->AbortMultipartUpload(
        {plan_.bucket, plan_.dest_key, upload_id},
        [self = shared_from_this(), error = std::move(error)](Status) { self->done_(error); });
  }

  const std::shared_ptr<s3::ObjectStore> store_;
  const CopyPlan plan_;
  const uint64_t part_size_;
  const uint64_t parts_;
  const s3::Callback<CopyOutcome> done_;

  Mutex mu_;  // leaf lock: never held while calling the store or done_
  std::string upload_id_ GUARDED_BY(mu_);
  std::vector<std::string> etags_ GUARDED_BY(mu_);  // by part index
  uint64_t next_ GUARDED_BY(mu_) = 0;               // index of the next part to send
  uint32_t in_flight_ GUARDED_BY(mu_) = 0;
  Status error_ GUARDED_BY(mu_);  // the first failure; no part is sent after it
  bool finishing_ GUARDED_BY(mu_) = false;
};

}  // namespace

uint64_t CopyPartSize(uint64_t size, uint64_t part_size) {
  uint64_t p = std::max<uint64_t>(part_size, 1);
  while ((size + p - 1) / p > kMaxParts) p *= 2;
  return p;
}

void CopyWholeObject(std::shared_ptr<s3::ObjectStore> store, CopyPlan plan,
                     s3::Callback<CopyOutcome> done) {
  if (plan.source.size <= plan.threshold || plan.source.size == 0) {
    s3::CopyObjectRequest req;
    req.source_bucket = plan.bucket;
    req.source_key = plan.source_key;
    req.bucket = plan.bucket;
    req.key = plan.dest_key;
    const std::string what = "CopyObject " + plan.source_key + " to " + plan.dest_key;
    store->CopyObject(req, [done = std::move(done), what](Result<std::string> etag) {
      if (!etag.ok()) return done(std::move(etag).status().WithContext(what));
      done(CopyOutcome{std::move(*etag), 0});
    });
    return;
  }
  std::make_shared<MultipartCopy>(std::move(store), std::move(plan), std::move(done))->Start();
}

}  // namespace reelfs::fuse::detail

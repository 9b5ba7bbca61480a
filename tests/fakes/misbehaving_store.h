// MisbehavingStore: an ObjectStore decorator that breaks the S3 protocol in one chosen way, in
// front of any store (the in-memory fake in unit tests); everything else is forwarded. For the
// clients' defences against a broken server: listings that never end, an ignored If-Match.
//
// Thread-safety: the fault may be switched while requests run (atomics); calls go to the inner
// store as they come.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "s3/object_store.h"

namespace reelfs::testing {

class MisbehavingStore final : public s3::ObjectStore {
 public:
  enum class Fault {
    kNone,
    kRepeatToken,       // every ListObjects page: IsTruncated, the same token
    kTokenCycle,        // tokens A, B, A, ...: a cycle, not a plain repeat
    kTruncatedNoToken,  // IsTruncated with no token
    kIgnoreIfMatch,     // GetObject drops If-Match and reports the object's current ETag
  };
  explicit MisbehavingStore(std::shared_ptr<s3::ObjectStore> inner) : inner_(std::move(inner)) {}
  std::atomic<Fault> fault{Fault::kNone};
  std::atomic<int> list_calls{0};

  void ListObjects(const s3::ListObjectsRequest& req,
                   s3::Callback<s3::ListObjectsPage> done) override {
    const int call = ++list_calls;
    const Fault f = fault.load();
    if (f == Fault::kNone || f == Fault::kIgnoreIfMatch) return inner_->ListObjects(req, done);
    s3::ListObjectsRequest first_page = req;  // the fake knows none of these tokens
    first_page.continuation_token.clear();
    inner_->ListObjects(
        first_page, [f, call, done = std::move(done)](Result<s3::ListObjectsPage> page) {
          if (!page.ok()) return done(std::move(page));
          page->is_truncated = true;
          page->next_continuation_token = f == Fault::kRepeatToken  ? "same"
                                          : f == Fault::kTokenCycle ? (call % 2 == 0 ? "A" : "B")
                                                                    : "";
          done(std::move(page));
        });
  }
  void GetObject(const s3::GetObjectRequest& req, s3::Callback<s3::GetObjectResult> done) override {
    if (fault.load() != Fault::kIgnoreIfMatch) return inner_->GetObject(req, std::move(done));
    s3::GetObjectRequest copy = req;
    copy.if_match.clear();
    inner_->GetObject(copy, std::move(done));
  }

  void ListBuckets(s3::Callback<std::vector<s3::BucketInfo>> done) override {
    inner_->ListBuckets(std::move(done));
  }
  void CreateBucket(const std::string& b, s3::StatusCallback done) override {
    inner_->CreateBucket(b, std::move(done));
  }
  void DeleteBucket(const std::string& b, s3::StatusCallback done) override {
    inner_->DeleteBucket(b, std::move(done));
  }
  void HeadObject(const s3::HeadObjectRequest& r, s3::Callback<s3::ObjectInfo> done) override {
    inner_->HeadObject(r, std::move(done));
  }
  void PutObject(const s3::PutObjectRequest& r, s3::Callback<std::string> done) override {
    inner_->PutObject(r, std::move(done));
  }
  void CreateMultipartUpload(const s3::CreateMultipartUploadRequest& r,
                             s3::Callback<std::string> done) override {
    inner_->CreateMultipartUpload(r, std::move(done));
  }
  void UploadPart(const s3::UploadPartRequest& r, s3::Callback<std::string> done) override {
    inner_->UploadPart(r, std::move(done));
  }
  void CompleteMultipartUpload(const s3::CompleteMultipartUploadRequest& r,
                               s3::Callback<std::string> done) override {
    inner_->CompleteMultipartUpload(r, std::move(done));
  }
  void AbortMultipartUpload(const s3::AbortMultipartUploadRequest& r,
                            s3::StatusCallback done) override {
    inner_->AbortMultipartUpload(r, std::move(done));
  }
  void DeleteObject(const s3::DeleteObjectRequest& r, s3::StatusCallback done) override {
    inner_->DeleteObject(r, std::move(done));
  }
  void DeleteObjects(const s3::DeleteObjectsRequest& r,
                     s3::Callback<s3::DeleteObjectsResult> done) override {
    inner_->DeleteObjects(r, std::move(done));
  }
  void CopyObject(const s3::CopyObjectRequest& r, s3::Callback<std::string> done) override {
    inner_->CopyObject(r, std::move(done));
  }
  void RestoreObject(const s3::RestoreObjectRequest& r,
                     s3::Callback<s3::RestoreOutcome> done) override {
    inner_->RestoreObject(r, std::move(done));
  }

 private:
  std::shared_ptr<s3::ObjectStore> inner_;
};

}  // namespace reelfs::testing

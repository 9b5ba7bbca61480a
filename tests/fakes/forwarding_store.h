// ForwardingStore: an ObjectStore that hands every call to another one. The base of the tests'
// decorators (a misbehaving server, a probe, a store that holds answers): each overrides only
// the calls it changes.
//
// Thread-safety: as the inner store's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "s3/object_store.h"

namespace reelfs::testing {

class ForwardingStore : public s3::ObjectStore {
 public:
  explicit ForwardingStore(std::shared_ptr<s3::ObjectStore> inner) : inner_(std::move(inner)) {}

  void ListBuckets(s3::Callback<std::vector<s3::BucketInfo>> done) override {
    inner_->ListBuckets(std::move(done));
  }
  void CreateBucket(const std::string& b, s3::StatusCallback done) override {
    inner_->CreateBucket(b, std::move(done));
  }
  void DeleteBucket(const std::string& b, s3::StatusCallback done) override {
    inner_->DeleteBucket(b, std::move(done));
  }
  void ListObjects(const s3::ListObjectsRequest& r,
                   s3::Callback<s3::ListObjectsPage> done) override {
    inner_->ListObjects(r, std::move(done));
  }
  void HeadObject(const s3::HeadObjectRequest& r, s3::Callback<s3::ObjectInfo> done) override {
    inner_->HeadObject(r, std::move(done));
  }
  void GetObject(const s3::GetObjectRequest& r, s3::Callback<s3::GetObjectResult> done) override {
    inner_->GetObject(r, std::move(done));
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
  void ListMultipartUploads(const s3::ListMultipartUploadsRequest& r,
                            s3::Callback<s3::ListMultipartUploadsPage> done) override {
    inner_->ListMultipartUploads(r, std::move(done));
  }
  void ListParts(const s3::ListPartsRequest& r, s3::Callback<s3::ListPartsPage> done) override {
    inner_->ListParts(r, std::move(done));
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
  void UploadPartCopy(const s3::UploadPartCopyRequest& r, s3::Callback<std::string> done) override {
    inner_->UploadPartCopy(r, std::move(done));
  }
  void RestoreObject(const s3::RestoreObjectRequest& r,
                     s3::Callback<s3::RestoreOutcome> done) override {
    inner_->RestoreObject(r, std::move(done));
  }

 protected:
  std::shared_ptr<s3::ObjectStore> inner_;
};

}  // namespace reelfs::testing

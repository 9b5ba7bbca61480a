// ForwardingStore: an ObjectStore that hands every call to another one. The base of decorators
// (the local object cache, cache/caching_store.h; the tests' misbehaving servers and probes): each
// overrides only the calls it changes.
//
// Thread-safety: as the inner store's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "s3/object_store.h"

namespace reelfs::s3 {

class ForwardingStore : public ObjectStore {
 public:
  explicit ForwardingStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  void ListBuckets(Callback<std::vector<BucketInfo>> done) override {
    inner_->ListBuckets(std::move(done));
  }
  void CreateBucket(const std::string& b, StatusCallback done) override {
    inner_->CreateBucket(b, std::move(done));
  }
  void DeleteBucket(const std::string& b, StatusCallback done) override {
    inner_->DeleteBucket(b, std::move(done));
  }
  void ListObjects(const ListObjectsRequest& r, Callback<ListObjectsPage> done) override {
    inner_->ListObjects(r, std::move(done));
  }
  void HeadObject(const HeadObjectRequest& r, Callback<ObjectInfo> done) override {
    inner_->HeadObject(r, std::move(done));
  }
  void GetObject(const GetObjectRequest& r, Callback<GetObjectResult> done) override {
    inner_->GetObject(r, std::move(done));
  }
  void PutObject(const PutObjectRequest& r, Callback<std::string> done) override {
    inner_->PutObject(r, std::move(done));
  }
  void CreateMultipartUpload(const CreateMultipartUploadRequest& r,
                             Callback<std::string> done) override {
    inner_->CreateMultipartUpload(r, std::move(done));
  }
  void UploadPart(const UploadPartRequest& r, Callback<std::string> done) override {
    inner_->UploadPart(r, std::move(done));
  }
  void CompleteMultipartUpload(const CompleteMultipartUploadRequest& r,
                               Callback<std::string> done) override {
    inner_->CompleteMultipartUpload(r, std::move(done));
  }
  void AbortMultipartUpload(const AbortMultipartUploadRequest& r, StatusCallback done) override {
    inner_->AbortMultipartUpload(r, std::move(done));
  }
  void ListMultipartUploads(const ListMultipartUploadsRequest& r,
                            Callback<ListMultipartUploadsPage> done) override {
    inner_->ListMultipartUploads(r, std::move(done));
  }
  void ListParts(const ListPartsRequest& r, Callback<ListPartsPage> done) override {
    inner_->ListParts(r, std::move(done));
  }
  void DeleteObject(const DeleteObjectRequest& r, StatusCallback done) override {
    inner_->DeleteObject(r, std::move(done));
  }
  void DeleteObjects(const DeleteObjectsRequest& r, Callback<DeleteObjectsResult> done) override {
    inner_->DeleteObjects(r, std::move(done));
  }
  void CopyObject(const CopyObjectRequest& r, Callback<std::string> done) override {
    inner_->CopyObject(r, std::move(done));
  }
  void UploadPartCopy(const UploadPartCopyRequest& r, Callback<std::string> done) override {
    inner_->UploadPartCopy(r, std::move(done));
  }
  void RestoreObject(const RestoreObjectRequest& r, Callback<RestoreOutcome> done) override {
    inner_->RestoreObject(r, std::move(done));
  }

 protected:
  std::shared_ptr<ObjectStore> inner_;
};

}  // namespace reelfs::s3

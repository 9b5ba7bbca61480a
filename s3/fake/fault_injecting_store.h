// FaultInjectingStore: an ObjectStore decorator that makes chosen calls fail or slow down, for
// tests of retry, fallback and error paths in upper layers (modelled on mountpoint-s3's
// failure_client.rs and leveldb's ErrorEnv).
//
//   auto fake = std::make_shared<FakeObjectStore>();
//   FaultInjectingStore store(fake);
//   store.FailNext(Operation::kGetObject, 2, Status::Unavailable("injected 503"));
//   store.SetFault(Operation::kHeadObject, [](const RequestInfo& r) -> std::optional<Status> {
//     if (r.key == "bad") return Status::PermissionDenied("injected");
//     return std::nullopt;
//   });
//
// For each call: the latency for its operation (if any) is waited out first, asynchronously;
// then a pending FailNext count for the operation fails it; then the SetFault callback decides;
// otherwise the call goes to the wrapped store. An injected failure never reaches the wrapped
// store, and its callback runs on the decorator's own worker thread (never inline), like a real
// response. A fault callback returning an OK Status is treated as "no fault".
//
// Lifetime: the decorator shares ownership of the wrapped store, so the store outlives every call
// forwarded to it. Destroying the decorator runs the callbacks of calls it is still holding
// (delayed or failed), forwarding delayed ones at once.
//
// Thread-safety: all methods may be called concurrently from any thread. Fault callbacks run on
// the calling thread or the decorator's worker, without any lock held.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "s3/fake/operation.h"
#include "s3/object_store.h"

namespace reelfs::s3 {

namespace fake_internal {
class CallbackExecutor;
}

// What a fault callback sees of a request.
struct RequestInfo {
  Operation op = Operation::kHeadObject;
  std::string bucket;
  std::string key;                 // source key for CopyObject and UploadPartCopy; the prefix for
                                   // ListMultipartUploads; empty for other bucket operations
  std::optional<ByteRange> range;  // GetObject; UploadPartCopy: the source range
  int part_number = 0;             // UploadPart and UploadPartCopy only
};

// Returns the Status to fail the call with, or nullopt to let it through.
using FaultFn = std::function<std::optional<Status>(const RequestInfo&)>;

class FaultInjectingStore final : public ObjectStore {
 public:
  explicit FaultInjectingStore(std::shared_ptr<ObjectStore> inner);
  ~FaultInjectingStore() override;
  FaultInjectingStore(const FaultInjectingStore&) = delete;
  FaultInjectingStore& operator=(const FaultInjectingStore&) = delete;

  // Replaces the fault callback of `op`; an empty function removes it.
  void SetFault(Operation op, FaultFn fault);
  // Fails the next `count` calls of `op` with `status` (must not be OK).
  void FailNext(Operation op, int count, Status status);
  // Lets the next `count` GetObject calls through to the wrapped store, but each one hands at most
  // `bytes` body bytes to the caller's buffer or sink and then fails with `status` (must not be
  // OK), as a connection that broke mid-body would: for tests of resume and short-read handling.
  // A body of `bytes` or fewer is delivered whole and the call still fails. Counted in
  // InjectedCount(kGetObject).
  void FailGetObjectAfterBytes(int count, uint64_t bytes, Status status);
  // Delays every call of `op` by `delay` before it is checked and forwarded (zero: none).
  void SetLatency(Operation op, std::chrono::milliseconds delay);
  // Removes every fault, pending failure and latency.
  void ClearFaults();
  // How many calls of `op` were failed by injection.
  uint64_t InjectedCount(Operation op) const;

  void ListBuckets(Callback<std::vector<BucketInfo>> done) override;
  void CreateBucket(const std::string& bucket, StatusCallback done) override;
  void DeleteBucket(const std::string& bucket, StatusCallback done) override;
  void ListObjects(const ListObjectsRequest& req, Callback<ListObjectsPage> done) override;
  void HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) override;
  void GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) override;
  void PutObject(const PutObjectRequest& req, Callback<std::string> done) override;
  void CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                             Callback<std::string> done) override;
  void UploadPart(const UploadPartRequest& req, Callback<std::string> done) override;
  void CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                               Callback<std::string> done) override;
  void AbortMultipartUpload(const AbortMultipartUploadRequest& req, StatusCallback done) override;
  void ListMultipartUploads(const ListMultipartUploadsRequest& req,
                            Callback<ListMultipartUploadsPage> done) override;
  void ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) override;
  void DeleteObject(const DeleteObjectRequest& req, StatusCallback done) override;
  void DeleteObjects(const DeleteObjectsRequest& req, Callback<DeleteObjectsResult> done) override;
  void CopyObject(const CopyObjectRequest& req, Callback<std::string> done) override;
  void UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) override;
  void RestoreObject(const RestoreObjectRequest& req, Callback<RestoreOutcome> done) override;

 private:
  struct Rule {
    FaultFn fault;
    int fail_next = 0;
    Status fail_status;
    std::chrono::milliseconds latency{0};
  };

  // Runs `forward` (which calls the wrapped store) or `fail(status)` for the request, after the
  // operation's latency.
  void Intercept(RequestInfo info, std::function<void()> forward, std::function<void(Status)> fail);
  // The injected failure for `info`, if any (consumes one FailNext count).
  std::optional<Status> Decide(const RequestInfo& info);
  // Forwards a GetObject, failing it part way through the body if FailGetObjectAfterBytes says so.
  void ForwardGetObject(const GetObjectRequest& req, Callback<GetObjectResult> done);

  struct BodyFault {
    int count = 0;
    uint64_t bytes = 0;
    Status status;
  };

  const std::shared_ptr<ObjectStore> inner_;
  std::array<std::atomic<uint64_t>, kOperationCount> injected_{};
  mutable Mutex mutex_;  // leaf lock: never held while calling a fault, the store or a callback
  std::array<Rule, kOperationCount> rules_ GUARDED_BY(mutex_);
  BodyFault body_fault_ GUARDED_BY(mutex_);
  // Last member: destroyed first, running held calls while the rest still exists.
  std::unique_ptr<fake_internal::CallbackExecutor> executor_;
};

}  // namespace reelfs::s3

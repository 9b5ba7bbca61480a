#include "s3/fake/fault_injecting_store.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "s3/fake/callback_executor_internal.h"

namespace reelfs::s3 {

FaultInjectingStore::FaultInjectingStore(std::shared_ptr<ObjectStore> inner)
    : inner_(std::move(inner)), executor_(std::make_unique<fake_internal::CallbackExecutor>()) {}

FaultInjectingStore::~FaultInjectingStore() = default;

void FaultInjectingStore::SetFault(Operation op, FaultFn fault) {
  MutexLock lock(mutex_);
  rules_[static_cast<size_t>(op)].fault = std::move(fault);
}

void FaultInjectingStore::FailNext(Operation op, int count, Status status) {
  MutexLock lock(mutex_);
  Rule& rule = rules_[static_cast<size_t>(op)];
  rule.fail_next = count;
  rule.fail_status = status.ok() ? Status::Internal("FailNext given an OK status") : status;
}

void FaultInjectingStore::FailGetObjectAfterBytes(int count, uint64_t bytes, Status status) {
  MutexLock lock(mutex_);
  body_fault_.count = count;
  body_fault_.bytes = bytes;
  body_fault_.status =
      status.ok() ? Status::Internal("FailGetObjectAfterBytes given an OK status") : status;
}

void FaultInjectingStore::SetLatency(Operation op, std::chrono::milliseconds delay) {
  MutexLock lock(mutex_);
  rules_[static_cast<size_t>(op)].latency = delay;
}

void FaultInjectingStore::ClearFaults() {
  MutexLock lock(mutex_);
  for (Rule& rule : rules_) rule = Rule{};
  body_fault_ = BodyFault{};
}

uint64_t FaultInjectingStore::InjectedCount(Operation op) const {
  return injected_[static_cast<size_t>(op)].load(std::memory_order_relaxed);
}

std::optional<Status> FaultInjectingStore::Decide(const RequestInfo& info) {
  FaultFn fault;
  {
    MutexLock lock(mutex_);
    Rule& rule = rules_[static_cast<size_t>(info.op)];
    if (rule.fail_next > 0) {
      --rule.fail_next;
      injected_[static_cast<size_t>(info.op)].fetch_add(1, std::memory_order_relaxed);
      return rule.fail_status;
    }
    fault = rule.fault;
  }
  if (!fault) return std::nullopt;
  std::optional<Status> status = fault(info);
  if (!status.has_value() || status->ok()) return std::nullopt;
  injected_[static_cast<size_t>(info.op)].fetch_add(1, std::memory_order_relaxed);
  return status;
}

void FaultInjectingStore::Intercept(RequestInfo info, std::function<void()> forward,
                                    std::function<void(Status)> fail) {
  std::chrono::milliseconds latency;
  {
    MutexLock lock(mutex_);
    latency = rules_[static_cast<size_t>(info.op)].latency;
  }
  if (latency.count() > 0) {
    executor_->PostAfter(latency, [this, info = std::move(info), forward = std::move(forward),
                                   fail = std::move(fail)] {
      if (std::optional<Status> status = Decide(info)) {
        fail(std::move(*status));
      } else {
        forward();
      }
    });
    return;
  }
  if (std::optional<Status> status = Decide(info)) {
    executor_->Post([fail = std::move(fail), status = std::move(*status)]() mutable {
      fail(std::move(status));
    });
    return;
  }
  forward();
}

void FaultInjectingStore::ForwardGetObject(const GetObjectRequest& req,
                                           Callback<GetObjectResult> done) {
  std::optional<BodyFault> fault;
  {
    MutexLock lock(mutex_);
    if (body_fault_.count > 0) {
      --body_fault_.count;
      fault = body_fault_;
    }
  }
  if (!fault) {
    inner_->GetObject(req, std::move(done));
    return;
  }
  injected_[static_cast<size_t>(Operation::kGetObject)].fetch_add(1, std::memory_order_relaxed);
  // The wrapped store writes through our sink, which passes on the first `bytes` (into the
  // caller's buffer or sink) and then aborts the transfer with the injected status.
  struct Progress {
    uint64_t delivered = 0;
    bool tripped = false;  // our sink aborted the transfer with the injected status
    Status caller_error;   // the caller's own sink or buffer refused a chunk
  };
  auto progress = std::make_shared<Progress>();
  GetObjectRequest inner_req = req;
  inner_req.buffer = {};
  inner_req.sink = [progress, limit = fault->bytes, injected = fault->status, buffer = req.buffer,
                    sink = req.sink](std::span<const std::byte> chunk) -> Status {
    const uint64_t room = limit - progress->delivered;
    const auto take = static_cast<size_t>(std::min<uint64_t>(room, chunk.size()));
    if (take > 0) {
      const std::span<const std::byte> part = chunk.first(take);
      Status st;
      if (sink) {
        st = sink(part);
      } else if (take > buffer.size() - progress->delivered) {
        st = Status::OutOfRange("GetObject: body is larger than the buffer (" +
                                std::to_string(buffer.size()) + " bytes)");
      } else {
        std::memcpy(buffer.data() + progress->delivered, part.data(), take);
      }
      if (!st.ok()) {
        progress->caller_error = st;
        return st;
      }
      progress->delivered += take;
    }
    if (take == chunk.size()) return Status::Ok();
    progress->tripped = true;
    return injected;
  };
  inner_->GetObject(inner_req, [progress, injected = fault->status,
                                done = std::move(done)](Result<GetObjectResult> r) {
    // Whatever the wrapped store says (done, or aborted by our sink), the call fails with the
    // injected status, unless the store or the caller's destination failed first on their own.
    if (!progress->caller_error.ok()) return done(progress->caller_error);
    if (!r.ok() && !progress->tripped) return done(r.status());
    done(injected);
  });
}

// Each method describes its request, then forwards or fails through Intercept.

void FaultInjectingStore::ListBuckets(Callback<std::vector<BucketInfo>> done) {
  Intercept(
      {.op = Operation::kListBuckets}, [this, done] { inner_->ListBuckets(done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::CreateBucket(const std::string& bucket, StatusCallback done) {
  Intercept(
      {.op = Operation::kCreateBucket, .bucket = bucket},
      [this, bucket, done] { inner_->CreateBucket(bucket, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::DeleteBucket(const std::string& bucket, StatusCallback done) {
  Intercept(
      {.op = Operation::kDeleteBucket, .bucket = bucket},
      [this, bucket, done] { inner_->DeleteBucket(bucket, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::ListObjects(const ListObjectsRequest& req,
                                      Callback<ListObjectsPage> done) {
  Intercept(
      {.op = Operation::kListObjects, .bucket = req.bucket, .key = req.prefix},
      [this, req, done] { inner_->ListObjects(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) {
  Intercept(
      {.op = Operation::kHeadObject, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->HeadObject(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  Intercept(
      {.op = Operation::kGetObject, .bucket = req.bucket, .key = req.key, .range = req.range},
      [this, req, done] { ForwardGetObject(req, done); }, [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::PutObject(const PutObjectRequest& req, Callback<std::string> done) {
  Intercept(
      {.op = Operation::kPutObject, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->PutObject(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                                                Callback<std::string> done) {
  Intercept(
      {.op = Operation::kCreateMultipartUpload, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->CreateMultipartUpload(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::UploadPart(const UploadPartRequest& req, Callback<std::string> done) {
  Intercept(
      {.op = Operation::kUploadPart,
       .bucket = req.bucket,
       .key = req.key,
       .part_number = req.part_number},
      [this, req, done] { inner_->UploadPart(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                                                  Callback<std::string> done) {
  Intercept(
      {.op = Operation::kCompleteMultipartUpload, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->CompleteMultipartUpload(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::AbortMultipartUpload(const AbortMultipartUploadRequest& req,
                                               StatusCallback done) {
  Intercept(
      {.op = Operation::kAbortMultipartUpload, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->AbortMultipartUpload(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::ListMultipartUploads(const ListMultipartUploadsRequest& req,
                                               Callback<ListMultipartUploadsPage> done) {
  Intercept(
      {.op = Operation::kListMultipartUploads, .bucket = req.bucket, .key = req.prefix},
      [this, req, done] { inner_->ListMultipartUploads(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) {
  Intercept(
      {.op = Operation::kListParts, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->ListParts(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::DeleteObject(const DeleteObjectRequest& req, StatusCallback done) {
  Intercept(
      {.op = Operation::kDeleteObject, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->DeleteObject(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::DeleteObjects(const DeleteObjectsRequest& req,
                                        Callback<DeleteObjectsResult> done) {
  Intercept(
      {.op = Operation::kDeleteObjects, .bucket = req.bucket},
      [this, req, done] { inner_->DeleteObjects(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::CopyObject(const CopyObjectRequest& req, Callback<std::string> done) {
  Intercept(
      {.op = Operation::kCopyObject, .bucket = req.source_bucket, .key = req.source_key},
      [this, req, done] { inner_->CopyObject(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::UploadPartCopy(const UploadPartCopyRequest& req,
                                         Callback<std::string> done) {
  Intercept(
      {.op = Operation::kUploadPartCopy,
       .bucket = req.source_bucket,
       .key = req.source_key,
       .range = req.source_range,
       .part_number = req.part_number},
      [this, req, done] { inner_->UploadPartCopy(req, done); },
      [done](Status s) { done(std::move(s)); });
}

void FaultInjectingStore::RestoreObject(const RestoreObjectRequest& req,
                                        Callback<RestoreOutcome> done) {
  Intercept(
      {.op = Operation::kRestoreObject, .bucket = req.bucket, .key = req.key},
      [this, req, done] { inner_->RestoreObject(req, done); },
      [done](Status s) { done(std::move(s)); });
}

}  // namespace reelfs::s3

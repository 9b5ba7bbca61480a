// FakeObjectStore: an in-memory ObjectStore with S3 semantics, for unit tests of upper layers
// (modelled on mountpoint-s3's mock_client.rs and leveldb's memenv).
//
// What it models:
//  - Buckets and objects; ListObjects with prefix, delimiter (common prefixes), max_keys (capped
//    at 1000 like S3), continuation tokens and start_after, in byte-wise lexicographic order.
//  - Head, ranged Get into a buffer or a sink (a body longer than the buffer is kOutOfRange),
//    if_match (kFailedPrecondition), cancellation (kCancelled), Put, multipart upload (ETag
//    "md5-of-part-md5s-N"), DeleteObject(s), Copy, UploadPartCopy (a source range, the source's
//    If-Match; a generated source is materialised for the range copied).
//  - The archive: an object in an archive storage class (GLACIER, DEEP_ARCHIVE) cannot be read
//    (kFailedPrecondition, s3_code InvalidObjectState, http 403) until restored. RestoreObject
//    answers kAccepted and leaves the restore ongoing until the test calls CompleteRestore(), or
//    completes it at once with `restore_completes_immediately`; a second request while ongoing is
//    kAlreadyInProgress, after completion kOk (AWS's 200). Head reports the state as RestoreInfo
//    and as the x-amz-restore text (restore_header); listings carry RestoreInfo only when asked
//    (fetch_restore_status), like AWS, and tape hints (SetHintsForTest) only with
//    fetch_tape_hints, like reelfs-gateway.
//  - Errors are built with S3ErrorToStatus, so they carry the same codes and detail (http status,
//    S3 code, request id) as the real client's.
//  - Generated objects: PutGeneratedObjectForTest creates an object of any size whose bytes are a
//    function of (key, offset) and are never stored, so multi-GiB files cost nothing; tests check
//    what they read with GeneratedContent().
//
// Callbacks: by default every operation runs on one internal worker thread, after the method has
// returned, in submission order (CallbackMode::kWorkerThread): callers see real asynchrony, and a
// callback that blocks on the same store deadlocks just as it would against the real client. With
// CallbackMode::kInline the operation and its callback run before the method returns (simple
// single-threaded tests). The destructor runs every pending callback, then joins the worker.
//
// Thread-safety: all methods may be called concurrently from any thread (one mutex guards the
// state; it is never held while a callback or a sink runs).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "s3/fake/operation.h"
#include "s3/object_store.h"

namespace reelfs::s3 {

namespace fake_internal {
class CallbackExecutor;
}

struct FakeObjectStoreOptions {
  enum class CallbackMode { kWorkerThread, kInline };
  CallbackMode callback_mode = CallbackMode::kWorkerThread;
  // RestoreObject completes the restore at once (still answering kAccepted the first time).
  bool restore_completes_immediately = false;
  // Smallest size of every multipart part but the last (S3: 5 MiB, kS3MinPartSize). 0 by default
  // so tests can use tiny parts; set it to catch clients that would draw EntityTooSmall.
  uint64_t min_part_size = 0;
  // Wall time of upload initiation and part uploads (ListMultipartUploads, ListParts); null: the
  // system clock. Must outlive the store.
  const Clock* clock = nullptr;
};

inline constexpr uint64_t kS3MinPartSize = 5ull << 20;

class FakeObjectStore final : public ObjectStore {
 public:
  explicit FakeObjectStore(FakeObjectStoreOptions options = {});
  ~FakeObjectStore() override;
  FakeObjectStore(const FakeObjectStore&) = delete;
  FakeObjectStore& operator=(const FakeObjectStore&) = delete;

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
  void DeleteObject(const DeleteObjectRequest& req, StatusCallback done) override;
  void DeleteObjects(const DeleteObjectsRequest& req, Callback<DeleteObjectsResult> done) override;
  void CopyObject(const CopyObjectRequest& req, Callback<std::string> done) override;
  void UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) override;
  void RestoreObject(const RestoreObjectRequest& req, Callback<RestoreOutcome> done) override;
  void ListMultipartUploads(const ListMultipartUploadsRequest& req,
                            Callback<ListMultipartUploadsPage> done) override;
  void ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) override;

  // --- Test helpers (synchronous; they do not count as calls). ---

  // Creates the bucket if missing.
  void CreateBucketForTest(const std::string& bucket);
  // Stores `data` (creating the bucket if missing) and returns its ETag. An archive storage class
  // makes the object archived (unreadable until restored).
  std::string PutObjectForTest(const std::string& bucket, const std::string& key, std::string data,
                               const std::string& storage_class = "STANDARD");
  // An object of `size` bytes whose content is GeneratedContent(key, offset, ...), not stored.
  // Its ETag is synthetic (not an MD5: hashing GiBs would defeat the purpose).
  std::string PutGeneratedObjectForTest(const std::string& bucket, const std::string& key,
                                        uint64_t size,
                                        const std::string& storage_class = "STANDARD");
  // Fills `out` with the bytes of a generated object named `key` from `offset` on.
  static void GeneratedContent(std::string_view key, uint64_t offset, std::span<std::byte> out);

  // Moves an existing object to an archive class, dropping any restored copy.
  Status ArchiveObjectForTest(const std::string& bucket, const std::string& key,
                              const std::string& storage_class = "GLACIER");
  // Finishes a restore (ongoing or not yet requested): the object becomes readable until
  // `expiry` (default: now + the requested days, or 1 day).
  Status CompleteRestore(const std::string& bucket, const std::string& key,
                         std::optional<WallTime> expiry = std::nullopt);
  // The restored copy expires: the object is archived again.
  Status ExpireRestore(const std::string& bucket, const std::string& key);
  // Server hints (x-reelfs-tape-* names -> values) returned on HEAD and GET, and in listings
  // that ask with fetch_tape_hints, as reelfs-gateway does (docs/protocols/tape-hints.md).
  Status SetHintsForTest(const std::string& bucket, const std::string& key,
                         std::map<std::string, std::string> hints);

  // Calls made to each ObjectStore method since construction or ResetCallCounts().
  uint64_t CallCount(Operation op) const;
  void ResetCallCounts();
  // Blocks until every callback posted so far has run (no-op in kInline mode). Never call from a
  // callback.
  void WaitIdle();

  static bool IsArchiveStorageClass(std::string_view storage_class);

 private:
  enum class RestoreState { kNone, kOngoing, kRestored };
  struct Object {
    std::shared_ptr<const std::string> data;  // null: generated content (GeneratedContent)
    uint64_t size = 0;
    std::string etag;
    WallTime last_modified{};
    std::string storage_class = "STANDARD";
    std::string content_type;
    std::map<std::string, std::string> user_metadata;
    RestoreState restore = RestoreState::kNone;
    int restore_days = 1;
    std::optional<WallTime> restore_expiry;
    std::map<std::string, std::string> hints;  // SetHintsForTest
  };
  struct Bucket {
    WallTime created{};
    std::map<std::string, Object> objects;  // std::string order is byte-wise, as S3 lists
  };
  struct Part {
    std::shared_ptr<const std::string> data;
    std::string etag;
    WallTime last_modified{};
  };
  struct Upload {
    std::string bucket;
    std::string key;
    std::string content_type;
    std::map<std::string, std::string> user_metadata;
    std::map<int, Part> parts;
    WallTime initiated{};
  };

  // Runs `task` (which does the operation and calls the callback) per callback_mode.
  void Dispatch(Operation op, std::function<void()> task);
  std::string NextRequestIdLocked() REQUIRES(mutex_);
  WallTime WallNowLocked() const REQUIRES(mutex_);
  Status ErrorLocked(int http_status, std::string_view code, std::string message,
                     std::string resource) REQUIRES(mutex_);
  // The object, or the S3 error for a missing bucket/key; with `need_data`, also the
  // InvalidObjectState error for an archived object that is not restored.
  Result<Object*> FindObjectLocked(const std::string& bucket, const std::string& key,
                                   bool need_data) REQUIRES(mutex_);
  ObjectInfo InfoLocked(const std::string& key, const Object& object) const REQUIRES(mutex_);

  Result<ListObjectsPage> DoListObjects(const ListObjectsRequest& req);
  Result<GetObjectResult> DoGetObject(const GetObjectRequest& req);
  Result<std::string> DoCompleteMultipartUpload(const CompleteMultipartUploadRequest& req);
  Result<std::string> DoCopyObject(const CopyObjectRequest& req);
  Result<std::string> DoUploadPartCopy(const UploadPartCopyRequest& req);
  Result<RestoreOutcome> DoRestoreObject(const RestoreObjectRequest& req);
  Result<ListMultipartUploadsPage> DoListMultipartUploads(const ListMultipartUploadsRequest& req);
  Result<ListPartsPage> DoListParts(const ListPartsRequest& req);

  const FakeObjectStoreOptions options_;
  std::array<std::atomic<uint64_t>, kOperationCount> calls_{};

  mutable Mutex mutex_;  // leaf lock: never held while calling a callback or sink
  std::map<std::string, Bucket> buckets_ GUARDED_BY(mutex_);
  std::map<std::string, Upload> uploads_ GUARDED_BY(mutex_);  // by upload id
  uint64_t next_id_ GUARDED_BY(mutex_) = 1;

  // Last member: destroyed first, so pending callbacks run while the state above still exists.
  std::unique_ptr<fake_internal::CallbackExecutor> executor_;
};

}  // namespace reelfs::s3

// ObjectStore: the asynchronous S3 operations the rest of reelfs needs.
//
// Implementations: s3/client (libcurl against a real server), s3/fake (in memory), and
// s3/fake's FaultInjectingStore decorator. Upper layers (fuse/core, cli) see only this interface.
//
// Every operation returns at once and later calls its callback exactly once, with a value or a
// non-OK Status whose code follows retry semantics (common/status.h) and whose detail carries the
// HTTP status, the S3 error code and the request id. Callbacks may run on an internal thread
// (the client's event loop): they must not block and must not call blocking helpers (Await)
// on the same store. Memory referenced by a request (GetObject buffer, PutObject body) must stay
// valid until the callback has run.
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/cancel.h"
#include "common/result.h"
#include "s3/types.h"
#include "s3/upload_types.h"

namespace reelfs::s3 {

template <class T>
using Callback = std::function<void(Result<T>)>;
using StatusCallback = std::function<void(Status)>;

struct HeadObjectRequest {
  std::string bucket;
  std::string key;
};

struct GetObjectRequest {
  std::string bucket;
  std::string key;
  std::optional<ByteRange> range;  // absent: whole object
  // Destination. Exactly one of `buffer` or `sink` is used: with a buffer the body is written
  // straight into it (no extra copy) and a body longer than the buffer fails with kOutOfRange;
  // with a sink every received chunk is handed over in order (a non-OK Status aborts).
  std::span<std::byte> buffer;
  std::function<Status(std::span<const std::byte>)> sink;
  std::string if_match;  // ETag the object must still have (else kFailedPrecondition)
  std::shared_ptr<CancellationToken> cancel;  // optional: abort early with kCancelled
  // Extra request headers (lowercase names), signed with the others: the x-amz-rdma-* headers of
  // an S3-over-RDMA GET (rdmaio). A request with any is one exchange (no retry, no resumption), and
  // needs `buffer` (not `sink`): its answer may be an empty body with the data sent over RDMA, so
  // a body shorter than the range is not a broken transfer. Such a body is collected whole and
  // then copied into the buffer (only the HTTP fallback path pays that copy).
  std::vector<std::pair<std::string, std::string>> extra_headers;
  // The endpoint URL (one of ClientOptions::endpoint's list, as written there) this GET must go
  // to, every attempt: an S3-over-RDMA GET names a session only that gateway holds. Empty: any.
  // An URL the client does not know is kInvalidArgument.
  std::string endpoint;
};

struct GetObjectResult {
  int http_status = 0;       // the answer's 2xx status (200, or 206 for a range); 0: not known
  uint64_t bytes = 0;        // body bytes delivered
  uint64_t object_size = 0;  // total object size (from Content-Range or Content-Length)
  ObjectInfo info;           // headers of the response (etag, storage class, restore, ...)
  // The response's x-amz-rdma-* headers (lowercase names, arrival order), for rdmaio's reply
  // classifier; empty for an ordinary server.
  std::vector<std::pair<std::string, std::string>> rdma_headers;
};

struct PutObjectRequest {
  std::string bucket;
  std::string key;
  std::span<const std::byte> body;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
  std::string storage_class;  // empty: server default
};

struct CreateMultipartUploadRequest {
  std::string bucket;
  std::string key;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
};

struct UploadPartRequest {
  std::string bucket;
  std::string key;
  std::string upload_id;
  int part_number = 0;  // 1..10000
  std::span<const std::byte> body;
};

struct CompleteMultipartUploadRequest {
  std::string bucket;
  std::string key;
  std::string upload_id;
  std::vector<CompletedPart> parts;
};

struct AbortMultipartUploadRequest {
  std::string bucket;
  std::string key;
  std::string upload_id;
};

struct DeleteObjectRequest {
  std::string bucket;
  std::string key;
};

struct DeleteObjectsRequest {
  std::string bucket;
  std::vector<std::string> keys;  // at most 1000
  bool quiet = false;
};

struct CopyObjectRequest {
  std::string source_bucket;
  std::string source_key;
  std::string bucket;
  std::string key;
  // Empty: metadata is copied (COPY); otherwise it replaces (REPLACE).
  std::optional<std::map<std::string, std::string>> replace_metadata;
};

// UploadPartCopy: part `part_number` of upload `upload_id` (of bucket/key) is bytes of an existing
// object, copied by the server (no body travels). S3 takes a source range of at most 5 GiB per
// part; a source in an archive storage class that is not restored is kFailedPrecondition with
// reason kArchived (403 InvalidObjectState), a missing one kNotFound (NoSuchKey).
struct UploadPartCopyRequest {
  std::string source_bucket;
  std::string source_key;
  std::optional<ByteRange> source_range;  // absent: the whole source (x-amz-copy-source-range)
  std::string source_if_match;  // ETag the source must still have (else kFailedPrecondition)
  std::string bucket;
  std::string key;
  std::string upload_id;
  int part_number = 0;  // 1..10000
};

struct RestoreObjectRequest {
  std::string bucket;
  std::string key;
  std::optional<int> days = 1;  // must be absent for Intelligent-Tiering archive tiers
  RestoreTier tier = RestoreTier::kStandard;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  virtual void ListBuckets(Callback<std::vector<BucketInfo>> done) = 0;
  virtual void CreateBucket(const std::string& bucket, StatusCallback done) = 0;
  virtual void DeleteBucket(const std::string& bucket, StatusCallback done) = 0;

  virtual void ListObjects(const ListObjectsRequest& req, Callback<ListObjectsPage> done) = 0;
  virtual void HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) = 0;
  virtual void GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) = 0;
  // Result: the new object's ETag.
  virtual void PutObject(const PutObjectRequest& req, Callback<std::string> done) = 0;

  // Result: the upload id.
  virtual void CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                                     Callback<std::string> done) = 0;
  // Result: the part's ETag.
  virtual void UploadPart(const UploadPartRequest& req, Callback<std::string> done) = 0;
  // Result: the object's ETag.
  virtual void CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                                       Callback<std::string> done) = 0;
  virtual void AbortMultipartUpload(const AbortMultipartUploadRequest& req,
                                    StatusCallback done) = 0;

  virtual void DeleteObject(const DeleteObjectRequest& req, StatusCallback done) = 0;
  virtual void DeleteObjects(const DeleteObjectsRequest& req,
                             Callback<DeleteObjectsResult> done) = 0;
  // Result: the new object's ETag.
  virtual void CopyObject(const CopyObjectRequest& req, Callback<std::string> done) = 0;
  // Result: the part's ETag (for CompleteMultipartUpload).
  virtual void UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) = 0;
  virtual void RestoreObject(const RestoreObjectRequest& req, Callback<RestoreOutcome> done) = 0;

  // One page of the multipart uploads in progress (s3/upload_types.h): the mount's sweep of
  // uploads a killed writer left behind. Keys come back decoded (the client asks for
  // encoding-type=url, so any key survives the XML).
  virtual void ListMultipartUploads(const ListMultipartUploadsRequest& req,
                                    Callback<ListMultipartUploadsPage> done) = 0;
  // One page of the parts staged for an upload (NoSuchUpload when it is gone).
  virtual void ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) = 0;
};

}  // namespace reelfs::s3

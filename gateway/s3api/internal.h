// Shared by the s3api/*.cc files only: the parsed request, response builders and the per-
// operation handlers (bucket_ops.cc, object_ops.cc, multipart_ops.cc, upload_listing_ops.cc).
//
// Thread-safety: handlers are called concurrently; they share nothing but the Store.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/archive/archive.h"
#include "gateway/archive/personality.h"
#include "gateway/http/types.h"
#include "gateway/rdma/hook.h"
#include "gateway/s3api/faults.h"
#include "gateway/s3api/service.h"
#include "gateway/store/store.h"
#include "s3/protocol/sigv4.h"
#include "s3/protocol/uri.h"

namespace reelfs::gateway::s3api {

using Started = http::Handler::Started;

struct S3Request {
  http::Request http;
  std::string bucket;  // empty: service level (ListBuckets)
  std::string key;     // empty: bucket level
  s3::QueryParams query;
  s3::VerifiedRequest auth;

  bool Has(std::string_view name) const;
  // Decoded query value, or "" when absent.
  std::string Query(std::string_view name) const;
  const std::string* Header(std::string_view name) const { return http.Find(name); }
  bool is_head() const { return http.method == "HEAD"; }
  std::string resource() const { return "/" + bucket + (key.empty() ? "" : "/" + key); }
};

struct Context {
  Store& store;
  const ServiceOptions& options;
  Archive* archive = nullptr;       // null: no archive (nothing is ever offline)
  FaultInjector* faults = nullptr;  // null: no fault scenario

  const ArchiveOptions& archive_options() const {
    static const ArchiveOptions kNone;
    return archive != nullptr ? archive->options() : kNone;
  }
};

// ---- responses ----
http::Response ErrorResponse(const S3Request& req, const Status& status);
http::Response ErrorResponse(const S3Request& req, std::string_view code, std::string message,
                             int http_status = 0);
http::Response XmlResponse(int status, std::string xml);
http::Response EmptyResponse(int status);
std::string QuoteEtag(std::string_view etag);

// ---- body exchanges ----
struct UploadResult {
  std::string md5_hex;
  uint64_t size = 0;
};
using UploadDone =
    std::function<http::Response(const S3Request& req, TmpFile& tmp, const UploadResult& result)>;
// Streams the body into a temporary file, hashing it (MD5 for the ETag, SHA-256 against the
// signed x-amz-content-sha256, Content-MD5 when sent), decoding aws-chunked framing.
Started StartUpload(Context ctx, S3Request req, std::string_view purpose, UploadDone done);
// The same into the target `make_target` returns, given the body's declared decoded size
// (x-amz-decoded-content-length for aws-chunked, else Content-Length; nullopt when neither).
using UploadTarget = RdmaPutCommit::Target;
Started StartUpload(Context ctx, S3Request req, const UploadTarget& make_target, UploadDone done);
using BufferedDone = std::function<http::Response(const S3Request& req, std::string body)>;
// Collects a small body (XML) in memory, with the same hash checks; bodies over
// options.max_xml_body draw MaxMessageLengthExceeded.
Started StartBuffered(Context ctx, S3Request req, BufferedDone done);

// ---- operations ----
Started ListBuckets(Context ctx, const S3Request& req);
Started CreateBucket(Context ctx, S3Request req);
Started DeleteBucket(Context ctx, const S3Request& req);
Started HeadBucket(Context ctx, const S3Request& req);
Started ListObjectsV2(Context ctx, const S3Request& req);
Started ListObjectsV1(Context ctx, const S3Request& req);  // marker / NextMarker
Started DeleteObjects(Context ctx, S3Request req);

Started GetObject(Context ctx, const S3Request& req);  // also HEAD
Started PutObject(Context ctx, S3Request req);
Started CopyObject(Context ctx, const S3Request& req);
// x-amz-copy-source ("[/]bucket/key[?versionId=...]", URL-encoded), validated; the error answer
// otherwise. Shared by CopyObject and UploadPartCopy.
struct CopySource {
  std::string bucket;
  std::string key;
};
std::variant<CopySource, http::Response> ParseCopySource(const S3Request& req);
// PUT ?partNumber&uploadId with x-amz-copy-source (copy_part_ops.cc).
Started UploadPartCopy(Context ctx, const S3Request& req);
Started DeleteObject(Context ctx, const S3Request& req);
Started RestoreObject(Context ctx, S3Request req);

// ---- archive (archive_ops.cc) ----
// x-amz-storage-class, x-amz-restore and (when enabled) x-reelfs-tape-* for HEAD/GET.
void AddArchiveHeaders(Context ctx, const ObjectRecord& rec, http::Response& r);
// 403 InvalidObjectState in the personality's words: GET / CopyObject of an offline object.
http::Response InvalidObjectState(Context ctx, const S3Request& req);
// Listing entries: StorageClass and RestoreStatus from the archive state (rows[i] is the record
// of page.objects[i]). Returns true when RestoreStatus was asked for and is supported.
bool DecorateListing(Context ctx, const S3Request& req, const std::vector<ObjectRecord>& rows,
                     s3::ListObjectsPage& page);
// The tape hint elements of a listing asked for them (docs/protocols/tape-hints.md).
void AddListingHints(Context ctx, const S3Request& req, const std::vector<ObjectRecord>& rows,
                     http::Response& r);
// /_reelfs/admin/<name> (docs/protocols/admin.md).
Started Admin(Context ctx, const S3Request& req, std::string_view name);

Started CreateMultipartUpload(Context ctx, const S3Request& req);
Started UploadPart(Context ctx, S3Request req);

// The checks PutObject / UploadPart make before the body (options, bucket, part number, upload)
// and the store step after it, shared by the HTTP body and the RDMA-read body (gateway/rdma).
RdmaPutPlan PlanPutObject(Context ctx, const S3Request& req);
RdmaPutPlan PlanUploadPart(Context ctx, const S3Request& req);
Started CompleteMultipartUpload(Context ctx, S3Request req);
Started AbortMultipartUpload(Context ctx, const S3Request& req);
// ---- multipart listings (upload_listing_ops.cc) ----
Started ListMultipartUploads(Context ctx, const S3Request& req);
Started ListParts(Context ctx, const S3Request& req);

// Content-Type, x-amz-storage-class (validated), x-amz-meta-* from the request headers.
Result<PutOptions> PutOptionsFromHeaders(const S3Request& req);

// Key for log lines: control characters replaced, long keys cut.
std::string LogSafe(std::string_view s);

}  // namespace reelfs::gateway::s3api

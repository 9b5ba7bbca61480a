// XML codecs for request and response bodies other than listings and errors: multipart upload,
// DeleteObjects, CopyObject, UploadPartCopy, RestoreObject, CreateBucket.
//
// Encoders produce what a client sends (or a server answers); parsers accept what the other side
// sends and reject malformed XML with kInvalidArgument (S3: MalformedXML).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

// <InitiateMultipartUploadResult><Bucket/><Key/><UploadId/></...>
struct InitiateMultipartUploadResult {
  std::string bucket;
  std::string key;
  std::string upload_id;
};
std::string EncodeInitiateMultipartUploadResult(const InitiateMultipartUploadResult& r);
Result<InitiateMultipartUploadResult> ParseInitiateMultipartUploadResult(std::string_view xml);

// <CompleteMultipartUpload><Part><PartNumber/><ETag/></Part>...</...>
std::string EncodeCompleteMultipartUpload(const std::vector<CompletedPart>& parts);
Result<std::vector<CompletedPart>> ParseCompleteMultipartUpload(std::string_view xml);

// <CompleteMultipartUploadResult><Location/><Bucket/><Key/><ETag/></...>
struct CompleteMultipartUploadResult {
  std::string location;
  std::string bucket;
  std::string key;
  std::string etag;  // quotes stripped when parsed; added when encoded
};
std::string EncodeCompleteMultipartUploadResult(const CompleteMultipartUploadResult& r);
// A 200 response may carry an <Error> document instead (S3 does this): returned as a Status.
Result<CompleteMultipartUploadResult> ParseCompleteMultipartUploadResult(std::string_view xml);

// <Delete><Quiet/><Object><Key/></Object>...</Delete>
struct DeleteObjectsInput {
  std::vector<std::string> keys;
  bool quiet = false;
};
std::string EncodeDeleteObjects(const DeleteObjectsInput& input);
Result<DeleteObjectsInput> ParseDeleteObjects(std::string_view xml);
// <DeleteResult><Deleted><Key/></Deleted><Error><Key/><Code/><Message/></Error></DeleteResult>
std::string EncodeDeleteResult(const DeleteObjectsResult& result);
Result<DeleteObjectsResult> ParseDeleteResult(std::string_view xml);

// <CopyObjectResult><LastModified/><ETag/></CopyObjectResult>
struct CopyObjectResult {
  std::string etag;
  WallTime last_modified{};
};
std::string EncodeCopyObjectResult(const CopyObjectResult& r);
// Like Complete, a 200 CopyObject response may carry an <Error> document: returned as a Status.
Result<CopyObjectResult> ParseCopyObjectResult(std::string_view xml);
// UploadPartCopy's answer, <CopyPartResult><LastModified/><ETag/></CopyPartResult>: the same two
// fields (the ETag is the part's, for CompleteMultipartUpload), and likewise an <Error> inside a
// 200 is returned as a Status.
using CopyPartResult = CopyObjectResult;
std::string EncodeCopyPartResult(const CopyPartResult& r);
Result<CopyPartResult> ParseCopyPartResult(std::string_view xml);

// <RestoreRequest><Days/><GlacierJobParameters><Tier/></GlacierJobParameters></RestoreRequest>
// The tier goes only in GlacierJobParameters (a top-level Tier draws MalformedXML on AWS, and the
// parser rejects it likewise). Parsing: Days optional but > 0 when present; no
// GlacierJobParameters means Standard; an unknown tier is kInvalidArgument.
struct RestoreRequestBody {
  std::optional<int> days;
  RestoreTier tier = RestoreTier::kStandard;
};
std::string EncodeRestoreRequest(const RestoreRequestBody& body);
Result<RestoreRequestBody> ParseRestoreRequest(std::string_view xml);

// <CreateBucketConfiguration><LocationConstraint/></...>; an empty body is valid (us-east-1).
Result<std::string> ParseCreateBucketConfiguration(std::string_view xml);

std::string_view RestoreTierName(RestoreTier tier);  // "Standard" | "Bulk" | "Expedited"

}  // namespace reelfs::s3

// S3 error documents (<Error><Code>..</Code>..</Error>) and their mapping to Status.
//
// The mapping chooses codes by retry semantics (common/status.h): 5xx, 429, SlowDown and
// RequestTimeout are kUnavailable (retryable); NoSuchKey/NoSuchBucket/NoSuchUpload kNotFound;
// AccessDenied kPermissionDenied; SignatureDoesNotMatch/InvalidAccessKeyId kUnauthenticated;
// InvalidObjectState kFailedPrecondition (archived, restore first); InvalidRange kOutOfRange;
// PreconditionFailed kFailedPrecondition; RestoreAlreadyInProgress kAlreadyExists; other 4xx
// kInvalidArgument or by status. Exceptions to "5xx is retryable": NotImplemented (501) is
// kUnimplemented, since retrying cannot help. Without a known code the HTTP status decides (a bare
// 409 is kAborted; no status at all is kUnknown). Detail carries http status, S3 code and request
// id; for an error document inside a 200 (or with no status) it carries the code's AWS status.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::s3 {

struct S3Error {
  int http_status = 0;
  std::string code;  // "NoSuchKey"
  std::string message;
  std::string resource;  // "/bucket/key"
  std::string request_id;
  // Extra members some errors carry (InvalidObjectState: StorageClass, AccessTier).
  std::string storage_class;
  std::string access_tier;
};

// Parses an error body. Malformed XML is an error (the caller then maps by HTTP status alone).
Result<S3Error> ParseErrorXml(std::string_view xml);
std::string EncodeErrorXml(const S3Error& error);

// Builds the Status for a failed response. `error.code` may be empty (HEAD has no body).
Status S3ErrorToStatus(const S3Error& error);

// The HTTP status S3 uses for an error code ("NoSuchKey" -> 404), 500 for unknown codes.
int HttpStatusForErrorCode(std::string_view code);

}  // namespace reelfs::s3

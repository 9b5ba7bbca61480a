// The S3 error table: what an S3 error answer (HTTP status + <Code>) means as a Status code and
// reason. One table for every way an answer arrives: s3/protocol/error_codec reads it for HTTP
// answers, rdmaio/channel for the answers an RDMA data channel gets, so a bad-signature 403 is
// kUnauthenticated and an InvalidObjectState 403 is kFailedPrecondition + kArchived on both paths.
// It lives in common because s3 and rdmaio may not include each other (docs/architecture.md
// "Module map"); it knows S3's codes, nothing of HTTP clients or XML.
//
// Codes are chosen by what the caller should do next (common/status.h): 5xx, 429, SlowDown and
// RequestTimeout are kUnavailable (retryable); NoSuchKey/NoSuchBucket/NoSuchUpload kNotFound;
// AccessDenied kPermissionDenied; SignatureDoesNotMatch/InvalidAccessKeyId kUnauthenticated;
// InvalidObjectState kFailedPrecondition + kArchived (restore first); PreconditionFailed (and a
// bare 412) kFailedPrecondition + kObjectChanged; InvalidRange kOutOfRange;
// RestoreAlreadyInProgress kAlreadyExists + kRestoreInProgress;
// GlacierExpeditedRetrievalNotAvailable kUnavailable + kTierUnavailable; other 4xx kInvalidArgument
// or by status. Exceptions to "5xx is retryable": NotImplemented (501) is kUnimplemented, since
// retrying cannot help. Without a known code the HTTP status decides (a bare 409 is kAborted; no
// status at all is kUnknown).
//
// Thread-safety: pure functions over a constant table.
#pragma once

#include <string_view>

#include "common/status.h"

namespace reelfs {

// S3 error codes that code outside the table compares against (the gateway answers them, the
// RDMA reply classifier and the RC control path read them). Spelled once, here.
inline constexpr std::string_view kS3InvalidObjectState = "InvalidObjectState";
inline constexpr std::string_view kS3PreconditionFailed = "PreconditionFailed";

struct S3ErrorClass {
  StatusCode code = StatusCode::kUnknown;
  StatusReason reason = StatusReason::kNone;
};

// The code and reason of an S3 error answer: by `s3_code` when the table knows it, else by
// `http_status` (HEAD answers have no body; servers invent codes). Never kOk.
S3ErrorClass ClassifyS3Error(int http_status, std::string_view s3_code);

// The HTTP status S3 documents for `s3_code` ("NoSuchKey" -> 404), 0 for a code not in the table.
int DocumentedHttpStatus(std::string_view s3_code);

}  // namespace reelfs

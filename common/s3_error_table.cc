#include "common/s3_error_table.h"

#include <array>

namespace reelfs {
namespace {

struct CodeRow {
  std::string_view code;
  int http_status;
  StatusCode status;
  StatusReason reason = StatusReason::kNone;
};

// The AWS error-code table (docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), with the
// Status code (and, where the code alone does not say it, the reason) each maps to. The code is
// chosen by what the caller should do next, not by the HTTP class: e.g. InvalidObjectState is a 403
// but means "restore first" (kFailedPrecondition), and NotImplemented is a 5xx that retrying cannot
// fix (kUnimplemented).
constexpr std::array kCodeTable = {
    // Transient: retry with backoff.
    CodeRow{"InternalError", 500, StatusCode::kUnavailable},
    CodeRow{"ServiceUnavailable", 503, StatusCode::kUnavailable},
    CodeRow{"SlowDown", 503, StatusCode::kUnavailable},
    CodeRow{"RequestTimeout", 400, StatusCode::kUnavailable},
    CodeRow{"Throttling", 503, StatusCode::kUnavailable},
    CodeRow{"ThrottlingException", 503, StatusCode::kUnavailable},
    CodeRow{"RequestLimitExceeded", 503, StatusCode::kUnavailable},
    // Expedited retrieval capacity is exhausted: the stager resends as Standard.
    CodeRow{"GlacierExpeditedRetrievalNotAvailable", 503, StatusCode::kUnavailable,
            StatusReason::kTierUnavailable},
    // A conflicting operation on the same resource is in progress: retry the whole sequence.
    CodeRow{"OperationAborted", 409, StatusCode::kAborted},
    // Missing things.
    CodeRow{"NoSuchKey", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchBucket", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchUpload", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchVersion", 404, StatusCode::kNotFound},
    // Authorization: the caller may not do this.
    CodeRow{"AccessDenied", 403, StatusCode::kPermissionDenied},
    CodeRow{"AllAccessDisabled", 403, StatusCode::kPermissionDenied},
    CodeRow{"AccountProblem", 403, StatusCode::kPermissionDenied},
    // Authentication: keys, signature or clock are wrong.
    CodeRow{"SignatureDoesNotMatch", 403, StatusCode::kUnauthenticated},
    CodeRow{"InvalidAccessKeyId", 403, StatusCode::kUnauthenticated},
    CodeRow{"RequestTimeTooSkewed", 403, StatusCode::kUnauthenticated},
    CodeRow{"ExpiredToken", 400, StatusCode::kUnauthenticated},
    CodeRow{"InvalidToken", 400, StatusCode::kUnauthenticated},
    CodeRow{"TokenRefreshRequired", 400, StatusCode::kUnauthenticated},
    // State of the world must change first.
    CodeRow{kS3InvalidObjectState, 403, StatusCode::kFailedPrecondition, StatusReason::kArchived},
    CodeRow{kS3PreconditionFailed, 412, StatusCode::kFailedPrecondition,
            StatusReason::kObjectChanged},
    CodeRow{"BucketNotEmpty", 409, StatusCode::kFailedPrecondition},
    CodeRow{"InvalidBucketState", 409, StatusCode::kFailedPrecondition},
    CodeRow{"PermanentRedirect", 301, StatusCode::kFailedPrecondition},
    // Ranges.
    CodeRow{"InvalidRange", 416, StatusCode::kOutOfRange},
    // Already there.
    CodeRow{"RestoreAlreadyInProgress", 409, StatusCode::kAlreadyExists,
            StatusReason::kRestoreInProgress},
    CodeRow{"BucketAlreadyExists", 409, StatusCode::kAlreadyExists},
    CodeRow{"BucketAlreadyOwnedByYou", 409, StatusCode::kAlreadyExists},
    // The server's disk is full (reelfs-gateway; RFC 4918's 507, not an AWS code). Not retried:
    // more room has to be made first.
    CodeRow{"InsufficientStorage", 507, StatusCode::kFailedPrecondition, StatusReason::kNoSpace},
    // Not supported by this server.
    CodeRow{"NotImplemented", 501, StatusCode::kUnimplemented},
    // The request itself is wrong: sending it again will not help.
    CodeRow{"MalformedXML", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidArgument", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidRequest", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidBucketName", 400, StatusCode::kInvalidArgument},
    CodeRow{"KeyTooLongError", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidPart", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidPartOrder", 400, StatusCode::kInvalidArgument},
    CodeRow{"EntityTooSmall", 400, StatusCode::kInvalidArgument},
    CodeRow{"EntityTooLarge", 400, StatusCode::kInvalidArgument},
    CodeRow{"XAmzContentSHA256Mismatch", 400, StatusCode::kInvalidArgument},
    CodeRow{"BadDigest", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidDigest", 400, StatusCode::kInvalidArgument},
    CodeRow{"IncompleteBody", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidURI", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidStorageClass", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidTag", 400, StatusCode::kInvalidArgument},
    CodeRow{"MetadataTooLarge", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingRequestBodyError", 400, StatusCode::kInvalidArgument},
    CodeRow{"UnexpectedContent", 400, StatusCode::kInvalidArgument},
    CodeRow{"AuthorizationHeaderMalformed", 400, StatusCode::kInvalidArgument},
    CodeRow{"AuthorizationQueryParametersError", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingSecurityHeader", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingContentLength", 411, StatusCode::kInvalidArgument},
    CodeRow{"MethodNotAllowed", 405, StatusCode::kInvalidArgument},
};

const CodeRow* FindCode(std::string_view code) {
  for (const CodeRow& row : kCodeTable) {
    if (row.code == code) return &row;
  }
  return nullptr;
}

// For errors without a (known) code: HEAD responses have no body, and servers invent codes.
S3ErrorClass ClassifyHttpStatus(int http_status) {
  if (http_status >= 500 || http_status == 429 || http_status == 408) {
    return {http_status == 501 ? StatusCode::kUnimplemented : StatusCode::kUnavailable};
  }
  switch (http_status) {
    case 401:
      return {StatusCode::kUnauthenticated};
    case 403:
      return {StatusCode::kPermissionDenied};
    case 404:
    case 410:
      return {StatusCode::kNotFound};
    // A bare 409 is a conflict with a concurrent change: retry the higher-level sequence.
    case 409:
      return {StatusCode::kAborted};
    // If-Match is the only precondition reelfs sends: a bare 412 (a HEAD has no body) is the
    // object having changed, as PreconditionFailed is.
    case 412:
      return {StatusCode::kFailedPrecondition, StatusReason::kObjectChanged};
    case 416:
      return {StatusCode::kOutOfRange};
    default:
      break;
  }
  if (http_status >= 400) return {StatusCode::kInvalidArgument};
  return {StatusCode::kUnknown};
}

}  // namespace

S3ErrorClass ClassifyS3Error(int http_status, std::string_view s3_code) {
  if (const CodeRow* row = s3_code.empty() ? nullptr : FindCode(s3_code)) {
    return {row->status, row->reason};
  }
  return ClassifyHttpStatus(http_status);
}

int DocumentedHttpStatus(std::string_view s3_code) {
  const CodeRow* row = FindCode(s3_code);
  return row ? row->http_status : 0;
}

}  // namespace reelfs

// The S3 error answers whose classification other modules act on: (HTTP status, <Code>) and the
// Status code and reason the shared table (common/s3_error_table.h) must give them. One list for
// the table's own test and for the RDMA path's (tests/unit/rdmaio/channel_replies_test.cc), which
// checks that an answer over RDMA becomes the same Status as over HTTP.
#pragma once

#include <array>

#include "common/status.h"

namespace reelfs::testing {

struct S3ErrorRow {
  int http;
  const char* code;
  StatusCode want;
  StatusReason reason = StatusReason::kNone;
};

inline constexpr std::array kS3ErrorRows = {
    S3ErrorRow{403, "InvalidObjectState", StatusCode::kFailedPrecondition, StatusReason::kArchived},
    S3ErrorRow{412, "PreconditionFailed", StatusCode::kFailedPrecondition,
               StatusReason::kObjectChanged},
    S3ErrorRow{412, "", StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
    S3ErrorRow{503, "GlacierExpeditedRetrievalNotAvailable", StatusCode::kUnavailable,
               StatusReason::kTierUnavailable},
    S3ErrorRow{409, "RestoreAlreadyInProgress", StatusCode::kAlreadyExists,
               StatusReason::kRestoreInProgress},
    // The same 403 means different things by its code (kPermissionDenied over RDMA used to
    // differ from kUnauthenticated over HTTP).
    S3ErrorRow{403, "SignatureDoesNotMatch", StatusCode::kUnauthenticated},
    S3ErrorRow{403, "InvalidAccessKeyId", StatusCode::kUnauthenticated},
    S3ErrorRow{403, "AccessDenied", StatusCode::kPermissionDenied},
    S3ErrorRow{403, "", StatusCode::kPermissionDenied},
    S3ErrorRow{404, "NoSuchKey", StatusCode::kNotFound},
    S3ErrorRow{416, "InvalidRange", StatusCode::kOutOfRange},
    S3ErrorRow{400, "InvalidArgument", StatusCode::kInvalidArgument},
    // A code wins over its status: RequestTimeout is a 400 that may be retried.
    S3ErrorRow{400, "RequestTimeout", StatusCode::kUnavailable},
    S3ErrorRow{503, "SlowDown", StatusCode::kUnavailable},
    S3ErrorRow{500, "", StatusCode::kUnavailable},
    S3ErrorRow{501, "NotImplemented", StatusCode::kUnimplemented},
    S3ErrorRow{501, "", StatusCode::kUnimplemented},
    S3ErrorRow{503, "Unheard", StatusCode::kUnavailable},
};

}  // namespace reelfs::testing

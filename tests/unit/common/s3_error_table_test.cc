// The shared S3 error table (common/s3_error_table.h): the rows whose reason other modules act on,
// and the fallbacks. The full code table is pinned through the codec in
// tests/unit/s3/error_codec_test.cc; the RDMA path's use of it in tests/unit/rdmaio/.
#include "common/s3_error_table.h"

#include <doctest/doctest.h>

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("ClassifyS3Error: the code decides, else the HTTP status") {
    struct Row {
      int http;
      const char* code;
      StatusCode want;
      StatusReason reason;
    };
    const Row rows[] = {
        {403, "InvalidObjectState", StatusCode::kFailedPrecondition, StatusReason::kArchived},
        {412, "PreconditionFailed", StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
        {412, "", StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
        // The same 403 means different things by its code.
        {403, "SignatureDoesNotMatch", StatusCode::kUnauthenticated, StatusReason::kNone},
        {403, "AccessDenied", StatusCode::kPermissionDenied, StatusReason::kNone},
        {403, "", StatusCode::kPermissionDenied, StatusReason::kNone},
        // A code wins over its status: RequestTimeout is a 400 that may be retried.
        {400, "RequestTimeout", StatusCode::kUnavailable, StatusReason::kNone},
        {501, "", StatusCode::kUnimplemented, StatusReason::kNone},
        {503, "Unheard", StatusCode::kUnavailable, StatusReason::kNone},
        {0, "", StatusCode::kUnknown, StatusReason::kNone},
        {200, "", StatusCode::kUnknown, StatusReason::kNone},  // never kOk
    };
    for (const Row& row : rows) {
      CAPTURE(row.http);
      CAPTURE(row.code);
      const S3ErrorClass got = ClassifyS3Error(row.http, row.code);
      CHECK(got.code == row.want);
      CHECK(got.reason == row.reason);
    }
  }

  TEST_CASE("DocumentedHttpStatus: the AWS status of a code, 0 when unknown") {
    CHECK(DocumentedHttpStatus(kS3InvalidObjectState) == 403);
    CHECK(DocumentedHttpStatus(kS3PreconditionFailed) == 412);
    CHECK(DocumentedHttpStatus("NoSuchKey") == 404);
    CHECK(DocumentedHttpStatus("Unheard") == 0);
    CHECK(DocumentedHttpStatus("") == 0);
  }
}

}  // namespace
}  // namespace reelfs

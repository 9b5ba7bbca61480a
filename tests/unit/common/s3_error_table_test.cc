// The shared S3 error table (common/s3_error_table.h): the rows whose reason other modules act on,
// and the fallbacks. The full code table is pinned through the codec in
// tests/unit/s3/error_codec_test.cc; the RDMA path's use of it in tests/unit/rdmaio/.
#include "common/s3_error_table.h"

#include <doctest/doctest.h>

#include "tests/unit/common/s3_error_rows.h"

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("ClassifyS3Error: the code decides, else the HTTP status") {
    for (const testing::S3ErrorRow& row : testing::kS3ErrorRows) {
      CAPTURE(row.http);
      CAPTURE(row.code);
      const S3ErrorClass got = ClassifyS3Error(row.http, row.code);
      CHECK(got.code == row.want);
      CHECK(got.reason == row.reason);
    }
    // Without any code or status there is nothing to go by, and a 2xx is never an error's kOk.
    CHECK(ClassifyS3Error(0, "").code == StatusCode::kUnknown);
    CHECK(ClassifyS3Error(200, "").code == StatusCode::kUnknown);
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

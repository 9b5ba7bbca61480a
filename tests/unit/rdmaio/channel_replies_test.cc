// channel::ErrorFromReply (rdmaio/channel/channel_replies.h): an error answer to a data request
// becomes the same Status over RDMA as over HTTP. A scripted answer (no Status of its own) is read
// with the S3 error table and compared, row by row, with what s3/protocol's codec makes of the
// same answer; a control plane's own Status is passed through unchanged.
#include "rdmaio/channel/channel_replies.h"

#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/error_codec.h"
#include "tests/unit/common/s3_error_rows.h"

namespace reelfs::rdmaio::channel {
namespace {

TEST_SUITE("rdmaio") {
  TEST_CASE("ErrorFromReply: the same code and reason as the HTTP path") {
    for (const testing::S3ErrorRow& row : testing::kS3ErrorRows) {
      CAPTURE(row.http);
      CAPTURE(row.code);
      const ControlReply reply{.http_status = row.http, .s3_error_code = row.code};
      const Status rdma = ErrorFromReply(reply, "GET b/k");
      const Status http =
          s3::S3ErrorToStatus(s3::S3Error{.http_status = row.http, .code = row.code});
      CHECK(rdma.code() == row.want);
      CHECK(rdma.reason() == row.reason);
      CHECK(rdma.code() == http.code());
      CHECK(rdma.reason() == http.reason());
      CHECK(rdma.detail().http_status == row.http);
      CHECK(rdma.detail().s3_code == row.code);
    }
  }

  TEST_CASE("ErrorFromReply: a control plane's Status goes up unchanged, with context") {
    ControlReply reply{.http_status = 403, .s3_error_code = "InvalidObjectState"};
    reply.error = Status(
        StatusCode::kFailedPrecondition, StatusReason::kArchived,
        "InvalidObjectState: archived (/b/k)",
        StatusDetail{.http_status = 403, .s3_code = "InvalidObjectState", .request_id = "R7"});
    const Status s = ErrorFromReply(reply, "GET b/k");
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.reason() == StatusReason::kArchived);
    CHECK(s.detail().request_id == "R7");  // only the s3 layer's Status has it
    CHECK(s.message() == "GET b/k: InvalidObjectState: archived (/b/k)");
  }

  TEST_CASE("ErrorFromReply: a 2xx the classifier would not use is kDataLoss") {
    const Status s = ErrorFromReply(ControlReply{.http_status = 200}, "GET b/k");
    CHECK(s.code() == StatusCode::kDataLoss);
    CHECK(s.reason() == StatusReason::kNone);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::channel

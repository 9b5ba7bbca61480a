#include "common/status.h"

#include <cerrno>

#include <doctest/doctest.h>

#include "common/result.h"

namespace reelfs {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  REELFS_ASSIGN_OR_RETURN(int h, Half(v));
  REELFS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int v) {
  REELFS_RETURN_IF_ERROR(Half(v).status());
  return Status::Ok();
}

TEST_SUITE("common") {
  TEST_CASE("ok status is empty and cheap") {
    Status s;
    CHECK(s.ok());
    CHECK(s.code() == StatusCode::kOk);
    CHECK(s.message().empty());
    CHECK(s.ToString() == "OK");
  }

  TEST_CASE("error status keeps code, message and detail through copies") {
    StatusDetail d;
    d.http_status = 404;
    d.s3_code = "NoSuchKey";
    d.request_id = "R1";
    Status s(StatusCode::kNotFound, "no such key a/b", d);
    Status copy = s;
    CHECK(copy.code() == StatusCode::kNotFound);
    CHECK(copy.detail().s3_code == "NoSuchKey");
    CHECK(copy.ToString() == "NOT_FOUND: no such key a/b (http 404, NoSuchKey, request-id R1)");
    Status ctx = s.WithContext("GET bucket/a/b");
    CHECK(ctx.message() == "GET bucket/a/b: no such key a/b");
    CHECK(ctx.detail().http_status == 404);
  }

  TEST_CASE("a reason travels with copies, moves and context, and shows in ToString") {
    CHECK(Status().reason() == StatusReason::kNone);
    CHECK(Status::NotFound("x").reason() == StatusReason::kNone);
    Status s(StatusCode::kFailedPrecondition, StatusReason::kArchived, "GET b/k",
             StatusDetail{.http_status = 403, .s3_code = "InvalidObjectState"});
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.reason() == StatusReason::kArchived);
    Status copy = s;
    CHECK(copy.reason() == StatusReason::kArchived);
    Status moved = std::move(copy);
    CHECK(moved.reason() == StatusReason::kArchived);
    CHECK(s.WithContext("read").reason() == StatusReason::kArchived);
    CHECK(s.ToString() == "FAILED_PRECONDITION: GET b/k (http 403, InvalidObjectState, archived)");
    Status changed = s.WithReason(StatusReason::kObjectChanged);
    CHECK(changed.reason() == StatusReason::kObjectChanged);
    CHECK(changed.code() == StatusCode::kFailedPrecondition);
    CHECK(changed.detail().http_status == 403);
    CHECK(s.reason() == StatusReason::kArchived);  // the original is unchanged
    CHECK(Status().WithReason(StatusReason::kArchived).ok());
    // A reason is set where the condition is seen; the two-argument form leaves it kNone.
    CHECK(Status(StatusCode::kNotFound, StatusReason::kStaleInode, "inode 7").ToString() ==
          "NOT_FOUND: inode 7 (stale inode)");
  }

  TEST_CASE("every reason has a name") {
    CHECK(StatusReasonName(StatusReason::kNone).empty());
    for (int r = 1; r <= static_cast<int>(StatusReason::kSystemError); ++r) {
      CAPTURE(r);
      const std::string_view name = StatusReasonName(static_cast<StatusReason>(r));
      CHECK_FALSE(name.empty());
      CHECK(name != "?");
    }
  }

  TEST_CASE("retryable is decided by code") {
    CHECK(IsRetryable(Status::Unavailable("503")));
    CHECK(IsRetryable(Status::DeadlineExceeded("timeout")));
    CHECK_FALSE(IsRetryable(Status::NotFound("x")));
    CHECK_FALSE(IsRetryable(Status::FailedPrecondition("archived")));
    CHECK_FALSE(IsRetryable(Status::Unauthenticated("sig")));
    CHECK_FALSE(IsRetryable(Status()));
  }

  TEST_CASE("errno conversion") {
    Status s = ErrnoToStatus(ENOENT, "open /x");
    CHECK(s.code() == StatusCode::kNotFound);
    CHECK(s.detail().sys_errno == ENOENT);
    CHECK(s.reason() == StatusReason::kSystemError);
    CHECK(s.ToString() ==
          "NOT_FOUND: open /x: No such file or directory (errno No such file or "
          "directory)");
    CHECK(ErrnoToStatus(ENOSPC, "write").code() == StatusCode::kResourceExhausted);
    CHECK(ErrnoToStatus(ECONNREFUSED, "connect").code() == StatusCode::kUnavailable);
    CHECK(ErrnoToStatus(0, "nothing").ok());
  }

  TEST_CASE("result propagation macros") {
    CHECK(*Quarter(8) == 2);
    Result<int> bad = Quarter(6);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
    CHECK(CheckEven(4).ok());
    CHECK(CheckEven(3).code() == StatusCode::kInvalidArgument);
    CHECK(Half(3).value_or(-1) == -1);
  }
}

}  // namespace
}  // namespace reelfs

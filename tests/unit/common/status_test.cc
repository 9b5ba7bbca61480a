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

// The errno table, row by row (a data-driven table test). Each row names the
// judgement it pins; docs/semantics.md "## Errors" documents the same rows.
#include "fuse/lowlevel/errno_map.h"

#include <cerrno>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::fuse {
namespace {

struct Row {
  std::string name;
  Status status;
  int expected;
};

Status S3Error(StatusCode code, int http, std::string s3_code) {
  return Status(code, "s3 error", StatusDetail{.http_status = http, .s3_code = std::move(s3_code)});
}

Status Sys(StatusCode code, int err) { return Status(code, "sys", StatusDetail{.sys_errno = err}); }

Status Offline(int err) {
  return Status(StatusCode::kFailedPrecondition, "offline",
                StatusDetail{.sys_errno = err, .s3_code = "InvalidObjectState"});
}

std::vector<Row> Table() {
  return {
      {"ok", Status::Ok(), 0},
      {"NoSuchKey", S3Error(StatusCode::kNotFound, 404, "NoSuchKey"), ENOENT},
      {"not in listing", Status::NotFound("x"), ENOENT},
      {"AccessDenied", S3Error(StatusCode::kPermissionDenied, 403, "AccessDenied"), EACCES},
      {"SignatureDoesNotMatch", S3Error(StatusCode::kUnauthenticated, 403, "SignatureDoesNotMatch"),
       EACCES},
      {"InvalidAccessKeyId", S3Error(StatusCode::kUnauthenticated, 403, "InvalidAccessKeyId"),
       EACCES},
      {"archived", S3Error(StatusCode::kFailedPrecondition, 403, "InvalidObjectState"), EACCES},
      {"etag changed", S3Error(StatusCode::kFailedPrecondition, 412, "PreconditionFailed"), ESTALE},
      {"412 without code", S3Error(StatusCode::kFailedPrecondition, 412, ""), ESTALE},
      {"other precondition", Status::FailedPrecondition("x"), EIO},
      // EINVAL stays for what the caller (or the kernel on its behalf) did wrong.
      {"invalid argument", Status::InvalidArgument("x"), EINVAL},
      {"out of range", Status::OutOfRange("x"), EINVAL},
      {"resource exhausted", Status::ResourceExhausted("x"), ENOMEM},
      {"ENOSPC via sys_errno", Sys(StatusCode::kResourceExhausted, ENOSPC), ENOSPC},
      {"cancelled", Status::Cancelled("x"), EINTR},
      {"unimplemented", Status::Unimplemented("x"), ENOSYS},
      {"already exists", Status::AlreadyExists("x"), EEXIST},
      {"gateway unreachable", Status::Unavailable("connect failed"), EIO},
      {"503 after retries", S3Error(StatusCode::kUnavailable, 503, "SlowDown"), EIO},
      {"deadline", Status::DeadlineExceeded("x"), EIO},
      {"socket errno is not leaked", Sys(StatusCode::kUnavailable, ECONNREFUSED), EIO},
      {"timeout errno is not leaked", Sys(StatusCode::kDeadlineExceeded, ETIMEDOUT), EIO},
      {"data loss", Status::DataLoss("x"), EIO},
      // The server broke the protocol (issue 17 item 7): an unparsable, shifted or over-long
      // Content-Range, malformed listing XML, a listing that repeats its continuation token.
      // The caller's request was valid, so EIO (the reason is in the log line), never EINVAL.
      {"protocol violation: Content-Range",
       Status(StatusCode::kDataLoss,
              "GetObject b/k: the server's answer (HTTP 206) breaks the "
              "protocol: unparsable Content-Range"),
       EIO},
      {"protocol violation: listing XML",
       Status(StatusCode::kDataLoss,
              "ListObjectsV2: the server's answer (HTTP 200) breaks the "
              "protocol: unparsable body"),
       EIO},
      // A 2xx GET whose ETag is not the pinned one (the server ignored If-Match): the 412 it
      // should have sent, ESTALE (issue 17 item 5).
      {"If-Match ignored by the server",
       Status(StatusCode::kFailedPrecondition, "ETag changed",
              StatusDetail{.http_status = 412, .s3_code = "PreconditionFailed"}),
       ESTALE},
      {"interrupted", Status::Cancelled("interrupted by the caller (FUSE INTERRUPT)"), EINTR},
      {"aborted", Status::Aborted("x"), EIO},
      {"internal", Status::Internal("x"), EIO},
      {"unknown", Status(StatusCode::kUnknown, "x"), EIO},
      // Errors that began as an errno keep it, whatever code carried them.
      {"ESTALE inode", ErrnoToStatus(ESTALE, "inode 7"), ESTALE},
      {"EROFS open", ErrnoToStatus(EROFS, "open for write"), EROFS},
      {"EISDIR open", ErrnoToStatus(EISDIR, "open dir"), EISDIR},
      {"ENOTDIR", ErrnoToStatus(ENOTDIR, "lookup in file"), ENOTDIR},
      {"ENAMETOOLONG", ErrnoToStatus(ENAMETOOLONG, "name"), ENAMETOOLONG},
      {"ENOENT via errno", ErrnoToStatus(ENOENT, "x"), ENOENT},
      // Reads of offline objects (docs/semantics.md "Offline objects"): the mode's errno rides
      // on kFailedPrecondition + InvalidObjectState, so it is kept, unlike network errnos.
      {"offline, --offline=eagain", Offline(EAGAIN), EAGAIN},
      {"offline, wait timed out", Offline(ETIMEDOUT), ETIMEDOUT},
      {"offline, --offline=eacces", ErrnoToStatus(EACCES, "offline"), EACCES},
      {"no such xattr", ErrnoToStatus(ENODATA, "x"), ENODATA},
      {"restores unsupported", ErrnoToStatus(EOPNOTSUPP, "x"), EOPNOTSUPP},
  };
}

TEST_SUITE("fuse") {
  TEST_CASE("StatusToErrno: every row of the table") {
    for (const Row& row : Table()) {
      CAPTURE(row.name);
      CAPTURE(row.status.ToString());
      CHECK(StatusToErrno(row.status) == row.expected);
    }
  }

  TEST_CASE("StatusToErrno: every code maps to a positive errno") {
    // Guards the exhaustive switch: a new StatusCode must get a row, never 0 (a 0 reply would
    // tell the kernel the request succeeded).
    for (int c = static_cast<int>(StatusCode::kCancelled);
         c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
      Status s(static_cast<StatusCode>(c), "x");
      CAPTURE(s.ToString());
      CHECK(StatusToErrno(s) > 0);
    }
  }
}

}  // namespace
}  // namespace reelfs::fuse

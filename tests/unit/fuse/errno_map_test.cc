// The errno table, row by row (a data-driven table test). Each row names the judgement it pins.
// Every StatusReason and every StatusCode has a row, and docs/semantics.md "## Errors" is checked
// against the table: each reason and code is listed there with the errno the code gives it.
#include "fuse/lowlevel/errno_map.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "s3/protocol/error_codec.h"

namespace reelfs::fuse {
namespace {

struct Row {
  std::string name;
  Status status;
  int expected;
};

// An S3 error answer as the client reads it: through the error codec, where the reason is set.
Status S3Answer(int http, std::string code) {
  return s3::S3ErrorToStatus(s3::S3Error{.http_status = http, .code = std::move(code)});
}

Status Reason(StatusCode code, StatusReason reason) { return Status(code, reason, "x"); }

Status Sys(StatusCode code, int err) {
  return Status(code, StatusReason::kSystemError, "sys", StatusDetail{.sys_errno = err});
}

std::vector<Row> Table() {
  return {
      {"ok", Status::Ok(), 0},
      {"NoSuchKey", S3Answer(404, "NoSuchKey"), ENOENT},
      {"HEAD 404 (no body)", S3Answer(404, ""), ENOENT},
      {"not in listing", Status::NotFound("x"), ENOENT},
      {"AccessDenied", S3Answer(403, "AccessDenied"), EACCES},
      {"SignatureDoesNotMatch", S3Answer(403, "SignatureDoesNotMatch"), EACCES},
      {"InvalidAccessKeyId", S3Answer(403, "InvalidAccessKeyId"), EACCES},
      {"archived: GET InvalidObjectState", S3Answer(403, "InvalidObjectState"), EACCES},
      {"archived, --offline=eacces",
       Reason(StatusCode::kFailedPrecondition, StatusReason::kArchived), EACCES},
      {"etag changed: PreconditionFailed", S3Answer(412, "PreconditionFailed"), ESTALE},
      // Restore answers carry a reason for the stager and RestoreObject; the code decides errno.
      {"Expedited refused", S3Answer(503, "GlacierExpeditedRetrievalNotAvailable"), EIO},
      {"restore already running", S3Answer(409, "RestoreAlreadyInProgress"), EEXIST},
      {"412 without code (HEAD)", S3Answer(412, ""), ESTALE},
      // The detail alone decides nothing: without the reason the code's row applies.
      {"412 detail without the reason",
       Status(StatusCode::kFailedPrecondition, "x",
              StatusDetail{.http_status = 412, .s3_code = "PreconditionFailed"}),
       EIO},
      {"other precondition", Status::FailedPrecondition("x"), EIO},
      {"BucketNotEmpty", S3Answer(409, "BucketNotEmpty"), EIO},
      // EINVAL stays for what the caller (or the kernel on its behalf) did wrong.
      {"invalid argument", Status::InvalidArgument("x"), EINVAL},
      {"out of range", Status::OutOfRange("x"), EINVAL},
      {"resource exhausted", Status::ResourceExhausted("x"), ENOMEM},
      {"cancelled", Status::Cancelled("x"), EINTR},
      {"unimplemented", Status::Unimplemented("x"), ENOSYS},
      {"already exists", Status::AlreadyExists("x"), EEXIST},
      {"gateway unreachable", Status::Unavailable("connect failed"), EIO},
      {"503 after retries", S3Answer(503, "SlowDown"), EIO},
      {"deadline", Status::DeadlineExceeded("x"), EIO},
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
       Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged, "ETag changed",
              StatusDetail{.http_status = 412, .s3_code = "PreconditionFailed"}),
       ESTALE},
      {"interrupted", Status::Cancelled("interrupted by the caller (FUSE INTERRUPT)"), EINTR},
      {"aborted", Status::Aborted("x"), EIO},
      {"internal", Status::Internal("x"), EIO},
      {"unknown", Status(StatusCode::kUnknown, "x"), EIO},
      // Conditions fuse/core and the adapter detect themselves: the reason says which.
      {"ESTALE inode", Reason(StatusCode::kNotFound, StatusReason::kStaleInode), ESTALE},
      {"EROFS open", Reason(StatusCode::kFailedPrecondition, StatusReason::kReadOnly), EROFS},
      {"EISDIR open", Reason(StatusCode::kInvalidArgument, StatusReason::kIsADirectory), EISDIR},
      {"ENOTDIR", Reason(StatusCode::kInvalidArgument, StatusReason::kNotADirectory), ENOTDIR},
      {"ENAMETOOLONG", Reason(StatusCode::kInvalidArgument, StatusReason::kNameTooLong),
       ENAMETOOLONG},
      {"bad name", Reason(StatusCode::kNotFound, StatusReason::kInvalidName), ENOENT},
      {"absent per listing", Reason(StatusCode::kNotFound, StatusReason::kKnownAbsent), ENOENT},
      {"no such xattr", Reason(StatusCode::kNotFound, StatusReason::kNoSuchAttribute), ENODATA},
      {"handle not open", Reason(StatusCode::kInvalidArgument, StatusReason::kBadHandle), EBADF},
      {"restores unsupported", Reason(StatusCode::kUnimplemented, StatusReason::kNotSupported),
       EOPNOTSUPP},
      {"xattr buffer too small", Reason(StatusCode::kOutOfRange, StatusReason::kBufferTooSmall),
       ERANGE},
      // Writes (docs/semantics.md "Writes").
      {"delete without --allow-delete",
       Reason(StatusCode::kPermissionDenied, StatusReason::kNotPermitted), EPERM},
      {"file being written", Reason(StatusCode::kFailedPrecondition, StatusReason::kBusy), EBUSY},
      {"past 10 000 parts", Reason(StatusCode::kOutOfRange, StatusReason::kFileTooLarge), EFBIG},
      {"gateway disk full", S3Answer(507, "InsufficientStorage"), ENOSPC},
      {"TLS certificate not accepted",
       Reason(StatusCode::kFailedPrecondition, StatusReason::kTlsUntrusted), EIO},
      {"rename of a directory", Reason(StatusCode::kInvalidArgument, StatusReason::kCrossDevice),
       EXDEV},
      // Reads of offline objects (docs/semantics.md "Offline objects").
      {"offline, --offline=eagain or O_NONBLOCK",
       Reason(StatusCode::kFailedPrecondition, StatusReason::kArchivedNoWait), EAGAIN},
      {"offline, wait timed out",
       Reason(StatusCode::kFailedPrecondition, StatusReason::kRestoreTimedOut), ETIMEDOUT},
      {"offline, restore failed", Reason(StatusCode::kAborted, StatusReason::kRestoreFailed), EIO},
      // A refused RDMA window is refetched over HTTP; should one reach a reader, EIO.
      {"window quarantined",
       Reason(StatusCode::kFailedPrecondition, StatusReason::kWindowQuarantined), EIO},
      {"window busy", Reason(StatusCode::kFailedPrecondition, StatusReason::kWindowBusy), EIO},
      // A system call's errno is kept (ErrnoToStatus), except a network one.
      {"ENOSPC from a system call", Sys(StatusCode::kResourceExhausted, ENOSPC), ENOSPC},
      {"ErrnoToStatus keeps the errno", ErrnoToStatus(EMFILE, "open"), EMFILE},
      {"socket errno is not leaked", Sys(StatusCode::kUnavailable, ECONNREFUSED), EIO},
      {"timeout errno is not leaked", Sys(StatusCode::kDeadlineExceeded, ETIMEDOUT), EIO},
      {"kSystemError without an errno", Sys(StatusCode::kInternal, 0), EIO},
      // A sys_errno without kSystemError is a detail, not a decision.
      {"stray sys_errno", Status(StatusCode::kInternal, "x", StatusDetail{.sys_errno = ENOSPC}),
       EIO},
  };
}

// The reason's name as docs/semantics.md spells it. No default: a new reason fails to compile
// here (-Wswitch, -Werror) until it has a row and a line in the document.
std::string Identifier(StatusReason reason) {
  switch (reason) {
    case StatusReason::kNone:
      return "kNone";
    case StatusReason::kArchived:
      return "kArchived";
    case StatusReason::kObjectChanged:
      return "kObjectChanged";
    case StatusReason::kTierUnavailable:
      return "kTierUnavailable";
    case StatusReason::kRestoreInProgress:
      return "kRestoreInProgress";
    case StatusReason::kWindowQuarantined:
      return "kWindowQuarantined";
    case StatusReason::kWindowBusy:
      return "kWindowBusy";
    case StatusReason::kArchivedNoWait:
      return "kArchivedNoWait";
    case StatusReason::kRestoreTimedOut:
      return "kRestoreTimedOut";
    case StatusReason::kRestoreFailed:
      return "kRestoreFailed";
    case StatusReason::kStaleInode:
      return "kStaleInode";
    case StatusReason::kReadOnly:
      return "kReadOnly";
    case StatusReason::kNotADirectory:
      return "kNotADirectory";
    case StatusReason::kIsADirectory:
      return "kIsADirectory";
    case StatusReason::kNameTooLong:
      return "kNameTooLong";
    case StatusReason::kInvalidName:
      return "kInvalidName";
    case StatusReason::kKnownAbsent:
      return "kKnownAbsent";
    case StatusReason::kNoSuchAttribute:
      return "kNoSuchAttribute";
    case StatusReason::kBadHandle:
      return "kBadHandle";
    case StatusReason::kNotSupported:
      return "kNotSupported";
    case StatusReason::kBufferTooSmall:
      return "kBufferTooSmall";
    case StatusReason::kNotPermitted:
      return "kNotPermitted";
    case StatusReason::kBusy:
      return "kBusy";
    case StatusReason::kFileTooLarge:
      return "kFileTooLarge";
    case StatusReason::kNoSpace:
      return "kNoSpace";
    case StatusReason::kCrossDevice:
      return "kCrossDevice";
    case StatusReason::kTlsUntrusted:
      return "kTlsUntrusted";
    case StatusReason::kSystemError:
      return "kSystemError";
  }
  return "?";
}

constexpr int kLastReason = static_cast<int>(StatusReason::kSystemError);

std::string Identifier(StatusCode code) {
  std::string name(StatusCodeName(code));  // "FAILED_PRECONDITION" -> "kFailedPrecondition"
  std::string out = "k";
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? c : static_cast<char>(c - 'A' + 'a');
    upper = false;
  }
  return out;
}

std::string ErrnoName(int err) {
  switch (err) {
    case EACCES:
      return "EACCES";
    case EAGAIN:
      return "EAGAIN";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EIO:
      return "EIO";
    case ESTALE:
      return "ESTALE";
    case EROFS:
      return "EROFS";
    case ENOTDIR:
      return "ENOTDIR";
    case EISDIR:
      return "EISDIR";
    case ENAMETOOLONG:
      return "ENAMETOOLONG";
    case ENOENT:
      return "ENOENT";
    case ENODATA:
      return "ENODATA";
    case EBADF:
      return "EBADF";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ERANGE:
      return "ERANGE";
    case EPERM:
      return "EPERM";
    case EBUSY:
      return "EBUSY";
    case EFBIG:
      return "EFBIG";
    case ENOSPC:
      return "ENOSPC";
    case EINVAL:
      return "EINVAL";
    case ENOMEM:
      return "ENOMEM";
    case EINTR:
      return "EINTR";
    case ENOSYS:
      return "ENOSYS";
    case EEXIST:
      return "EEXIST";
    case EXDEV:
      return "EXDEV";
    default:
      return "errno " + std::to_string(err);
  }
}

// A status with `reason` as the code that carries it in the mount (any code gives the same
// errno, which the table above pins for the usual one).
Status Sample(StatusReason reason) {
  if (reason == StatusReason::kSystemError) return Sys(StatusCode::kResourceExhausted, ENOSPC);
  if (reason == StatusReason::kTierUnavailable) return Reason(StatusCode::kUnavailable, reason);
  if (reason == StatusReason::kRestoreInProgress) return Reason(StatusCode::kAlreadyExists, reason);
  return Reason(StatusCode::kFailedPrecondition, reason);
}

struct DocRow {
  std::string status;  // the "Status" cell
  std::string errno_text;
};

// The rows of the "## Errors" table of docs/semantics.md.
std::vector<DocRow> DocTable() {
  std::ifstream in(REELFS_SOURCE_DIR "/docs/semantics.md");
  REQUIRE(in.good());
  std::vector<DocRow> rows;
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.starts_with("## ")) {
      if (in_section) break;
      in_section = line == "## Errors";
      continue;
    }
    if (!in_section || !line.starts_with("|") || line.starts_with("| ---")) continue;
    std::vector<std::string> cells;
    std::stringstream cells_in(line.substr(1));
    for (std::string cell; std::getline(cells_in, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3 || cells[1].find("Status") != std::string::npos) continue;  // header
    rows.push_back({cells[1], cells[2]});
  }
  return rows;
}

// Whether some row lists `identifier` in its Status cell and `errno_name` in its errno cell.
bool Documented(const std::vector<DocRow>& doc, const std::string& identifier,
                const std::string& errno_name) {
  for (const DocRow& row : doc) {
    if (row.status.find("`" + identifier + "`") != std::string::npos &&
        row.errno_text.find("`" + errno_name + "`") != std::string::npos) {
      return true;
    }
  }
  return false;
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

  TEST_CASE("StatusToErrno: every reason has a row of its own") {
    std::vector<bool> seen(kLastReason + 1, false);
    for (const Row& row : Table()) seen[static_cast<int>(row.status.reason())] = true;
    for (int r = 1; r <= kLastReason; ++r) {
      CAPTURE(Identifier(static_cast<StatusReason>(r)));
      CHECK(seen[r]);
      CHECK(StatusToErrno(Sample(static_cast<StatusReason>(r))) > 0);
    }
  }

  TEST_CASE("docs/semantics.md lists every reason and code with its errno") {
    const std::vector<DocRow> doc = DocTable();
    REQUIRE(doc.size() > 10);
    for (int r = 1; r <= kLastReason; ++r) {
      const auto reason = static_cast<StatusReason>(r);
      const std::string errno_name = ErrnoName(StatusToErrno(Sample(reason)));
      CAPTURE(Identifier(reason));
      CAPTURE(errno_name);
      CHECK(Documented(doc, Identifier(reason), errno_name));
    }
    for (int c = static_cast<int>(StatusCode::kCancelled);
         c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
      const auto code = static_cast<StatusCode>(c);
      const std::string errno_name = ErrnoName(StatusToErrno(Status(code, "x")));
      CAPTURE(Identifier(code));
      CAPTURE(errno_name);
      CHECK(Documented(doc, Identifier(code), errno_name));
    }
  }
}

}  // namespace
}  // namespace reelfs::fuse

// Status: the result of an operation that returns no value.
//
// Errors are values (docs/conventions.md "Errors"). A Status is OK or carries a canonical code
// chosen by retry semantics, a typed reason where the code alone does not say what happened
// (archived, object changed, stale inode, ...), a message for humans, and an optional Detail with
// the foreign error that caused it (errno, HTTP status, S3 error code, request id). OK costs one
// null pointer.
//
// Thread-safety: a Status is a value; distinct objects may be used from distinct threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace reelfs {

// Canonical codes (the abseil set we need). Pick by what the caller should do next:
// kUnavailable = retry later; kFailedPrecondition = retrying will not help until the world
// changes (e.g. an archived object not yet restored); kUnauthenticated = bad signature/keys.
enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
};

std::string_view StatusCodeName(StatusCode code);

// What happened, where the code alone does not say it and a caller (the prefetcher, Core's
// offline path, the errno table in fuse/lowlevel/errno_map.cc) must tell cases apart. Set once,
// where the foreign answer is parsed (s3/protocol/error_codec and the shared table in
// common/s3_error_table.h) or where the condition is detected (fuse/core, rdmaio/wire's window
// fence); copies and WithContext keep it. Nobody re-derives it from the detail's fields.
// A new reason is a new row in errno_map.cc, its test and docs/semantics.md "Errors".
enum class StatusReason : uint8_t {
  kNone = 0,
  // Answers from S3 (HTTP or RDMA alike).
  kArchived,           // InvalidObjectState: the object is on tape and not restored
  kObjectChanged,      // PreconditionFailed / 412 on If-Match, or an answer with another ETag
  kTierUnavailable,    // GlacierExpeditedRetrievalNotAvailable: resend the restore as Standard
  kRestoreInProgress,  // RestoreAlreadyInProgress: the restore asked for is already running
  // The RDMA window fence (rdmaio/wire/window_fence.h) would not use the window.
  kWindowQuarantined,  // a failed request may still write into it until the channel fences it
  kWindowBusy,         // another request into it is still in flight
  // Reads of offline objects, answered per --offline (fuse/core/core_files.cc).
  kArchivedNoWait,   // archived, and this read does not wait (O_NONBLOCK, --offline=eagain)
  kRestoreTimedOut,  // archived, and the restore did not finish within --offline-timeout
  kRestoreFailed,    // the restore failed, or the object kept going offline right after it
  // File-system conditions detected by the mount itself (fuse/core, fuse/lowlevel).
  kStaleInode,       // an inode number the table does not (or no longer) know
  kReadOnly,         // a write to the read-only mount
  kNotADirectory,    // a directory operation on a file
  kIsADirectory,     // a file operation on a directory
  kNameTooLong,      // a name longer than a file name may be
  kInvalidName,      // a name no object can have ("", ".", "..", a NUL or '/')
  kKnownAbsent,      // no such name, answered from a fresh listing or the negative cache
  kNoSuchAttribute,  // no such extended attribute
  kBadHandle,        // a file or directory handle that is not open
  kNotSupported,     // an operation this mount does not offer (restores without a Restorer)
  kBufferTooSmall,   // the caller's buffer cannot hold the answer (the xattr size protocol)
  // Writes through the mount (docs/semantics.md "Writes").
  kNotPermitted,  // a write the mount refuses by policy (delete, overwrite, in-place change)
  kBusy,          // the file is being written by an open handle of this mount
  kFileTooLarge,  // past S3's object size or part count limit
  kNoSpace,       // the server has no room for the object (InsufficientStorage, HTTP 507)
  kCrossDevice,   // a rename the mount does not make (a directory): the caller copies instead
  // The server's TLS certificate was not accepted (unknown CA, a name that does not match).
  kTlsUntrusted,
  // A system call failed; its errno is in detail().sys_errno (ErrnoToStatus).
  kSystemError,
};

// "archived", "object changed", ...; "" for kNone. For logs and ToString.
std::string_view StatusReasonName(StatusReason reason);

// Where an error came from, kept so the single errno mapping and the logs can use it.
struct StatusDetail {
  int sys_errno = 0;       // errno captured right after the failing call, 0 if none
  int http_status = 0;     // HTTP status of the response, 0 if none
  std::string s3_code;     // S3 error <Code>, e.g. "NoSuchKey"
  std::string request_id;  // x-amz-request-id, for support
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, StatusDetail detail = {});
  Status(StatusCode code, StatusReason reason, std::string message, StatusDetail detail = {});

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status Unimplemented(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // kNone for OK or when the code says it all.
  StatusReason reason() const { return rep_ ? rep_->reason : StatusReason::kNone; }
  // Empty for OK.
  std::string_view message() const;
  // Default-constructed for OK or when the error had no foreign cause.
  const StatusDetail& detail() const;

  // "NOT_FOUND: no such key a/b (http 404, NoSuchKey, request-id R)"; the reason, if any, comes
  // last: "FAILED_PRECONDITION: ... (http 403, InvalidObjectState, archived)". "OK" for OK.
  std::string ToString() const;

  // Returns a copy with `context + ": "` prepended to the message (code, reason, detail kept).
  Status WithContext(std::string_view context) const;

  // Returns a copy with `reason` set; OK stays OK.
  Status WithReason(StatusReason reason) const;

  // Marks an intentional ignore so it can be found by grep.
  void IgnoreError() const {}

 private:
  struct Rep {
    StatusCode code;
    StatusReason reason;
    std::string message;
    StatusDetail detail;
  };
  std::unique_ptr<Rep> rep_;
};

// Whether trying the same operation again may succeed. Derived from the code only.
bool IsRetryable(const Status& status);

// Converts an errno value, captured right after the failing call, into a Status with reason
// kSystemError and the errno in detail().sys_errno. Only for system calls: a condition our own
// code detects gets its StatusReason instead of an invented errno.
Status ErrnoToStatus(int err, std::string_view context);

}  // namespace reelfs

// Propagation helpers: the only two.
#define REELFS_RETURN_IF_ERROR(expr)                   \
  do {                                                 \
    ::reelfs::Status reelfs_status__ = (expr);         \
    if (!reelfs_status__.ok()) return reelfs_status__; \
  } while (0)

#define REELFS_CONCAT_INNER_(a, b) a##b
#define REELFS_CONCAT_(a, b) REELFS_CONCAT_INNER_(a, b)
#define REELFS_ASSIGN_OR_RETURN(lhs, expr) \
  REELFS_ASSIGN_OR_RETURN_IMPL_(REELFS_CONCAT_(reelfs_result_, __LINE__), lhs, expr)
#define REELFS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

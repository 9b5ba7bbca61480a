#include "common/status.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace reelfs {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

std::string_view StatusReasonName(StatusReason reason) {
  switch (reason) {
    case StatusReason::kNone:
      return "";
    case StatusReason::kArchived:
      return "archived";
    case StatusReason::kObjectChanged:
      return "object changed";
    case StatusReason::kTierUnavailable:
      return "restore tier unavailable";
    case StatusReason::kRestoreInProgress:
      return "restore in progress";
    case StatusReason::kWindowQuarantined:
      return "window quarantined";
    case StatusReason::kWindowBusy:
      return "window busy";
    case StatusReason::kArchivedNoWait:
      return "archived, not waiting";
    case StatusReason::kRestoreTimedOut:
      return "restore timed out";
    case StatusReason::kRestoreFailed:
      return "restore failed";
    case StatusReason::kStaleInode:
      return "stale inode";
    case StatusReason::kReadOnly:
      return "read-only";
    case StatusReason::kNotADirectory:
      return "not a directory";
    case StatusReason::kIsADirectory:
      return "is a directory";
    case StatusReason::kNameTooLong:
      return "name too long";
    case StatusReason::kInvalidName:
      return "invalid name";
    case StatusReason::kKnownAbsent:
      return "known absent";
    case StatusReason::kNoSuchAttribute:
      return "no such attribute";
    case StatusReason::kBadHandle:
      return "bad handle";
    case StatusReason::kNotSupported:
      return "not supported";
    case StatusReason::kBufferTooSmall:
      return "buffer too small";
    case StatusReason::kNotPermitted:
      return "not permitted";
    case StatusReason::kBusy:
      return "busy";
    case StatusReason::kFileTooLarge:
      return "file too large";
    case StatusReason::kNoSpace:
      return "no space";
    case StatusReason::kCrossDevice:
      return "cross device";
    case StatusReason::kTlsUntrusted:
      return "TLS certificate not accepted";
    case StatusReason::kSystemError:
      return "system error";
  }
  return "?";
}

Status::Status(StatusCode code, std::string message, StatusDetail detail)
    : Status(code, StatusReason::kNone, std::move(message), std::move(detail)) {}

Status::Status(StatusCode code, StatusReason reason, std::string message, StatusDetail detail) {
  if (code == StatusCode::kOk) return;
  rep_ = std::make_unique<Rep>(Rep{code, reason, std::move(message), std::move(detail)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

std::string_view Status::message() const { return rep_ ? std::string_view(rep_->message) : ""; }

const StatusDetail& Status::detail() const {
  static const StatusDetail kEmpty;
  return rep_ ? rep_->detail : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  const StatusDetail& d = rep_->detail;
  std::string extra;
  auto add = [&extra](const std::string& part) {
    if (!extra.empty()) extra += ", ";
    extra += part;
  };
  if (d.http_status != 0) add("http " + std::to_string(d.http_status));
  if (!d.s3_code.empty()) add(d.s3_code);
  if (d.sys_errno != 0) add(std::string("errno ") + std::strerror(d.sys_errno));
  if (!d.request_id.empty()) add("request-id " + d.request_id);
  // kSystemError says no more than the errno already printed.
  if (rep_->reason != StatusReason::kNone && rep_->reason != StatusReason::kSystemError) {
    add(std::string(StatusReasonName(rep_->reason)));
  }
  if (!extra.empty()) out += " (" + extra + ")";
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  return Status(rep_->code, rep_->reason, std::string(context) + ": " + rep_->message,
                rep_->detail);
}

Status Status::WithReason(StatusReason reason) const {
  if (ok()) return Status();
  Status out = *this;
  out.rep_->reason = reason;
  return out;
}

bool IsRetryable(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kAborted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

Status ErrnoToStatus(int err, std::string_view context) {
  StatusCode code = StatusCode::kUnknown;
  switch (err) {
    case 0:
      return Status();
    case ENOENT:
      code = StatusCode::kNotFound;
      break;
    case EEXIST:
      code = StatusCode::kAlreadyExists;
      break;
    case EACCES:
    case EPERM:
      code = StatusCode::kPermissionDenied;
      break;
    case EINVAL:
    case ENAMETOOLONG:
    case ENOTDIR:
    case EISDIR:
      code = StatusCode::kInvalidArgument;
      break;
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      code = StatusCode::kResourceExhausted;
      break;
    case EAGAIN:
    case EINTR:
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
      code = StatusCode::kUnavailable;
      break;
    case ETIMEDOUT:
      code = StatusCode::kDeadlineExceeded;
      break;
    case ECANCELED:
      code = StatusCode::kCancelled;
      break;
    case EIO:
      code = StatusCode::kDataLoss;
      break;
    case ENOTEMPTY:
      code = StatusCode::kFailedPrecondition;
      break;
    case ENOSYS:
    case EOPNOTSUPP:
      code = StatusCode::kUnimplemented;
      break;
    default:
      break;
  }
  StatusDetail detail;
  detail.sys_errno = err;
  return Status(code, StatusReason::kSystemError, std::string(context) + ": " + std::strerror(err),
                std::move(detail));
}

}  // namespace reelfs

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

Status::Status(StatusCode code, std::string message, StatusDetail detail) {
  if (code == StatusCode::kOk) return;
  rep_ = std::make_unique<Rep>(Rep{code, std::move(message), std::move(detail)});
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
  if (!extra.empty()) out += " (" + extra + ")";
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  return Status(rep_->code, std::string(context) + ": " + rep_->message, rep_->detail);
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
  return Status(code, std::string(context) + ": " + std::strerror(err), std::move(detail));
}

}  // namespace reelfs

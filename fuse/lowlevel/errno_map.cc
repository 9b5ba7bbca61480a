// The errno table (docs/conventions.md "Errors"): one exhaustive switch, one comment per judgement
// call. The same rows are documented in docs/semantics.md "## Errors" and tested row by row in
// tests/unit/fuse/errno_map_test.cc.
#include "fuse/lowlevel/errno_map.h"

#include <cerrno>

namespace reelfs::fuse {
namespace {

// S3 error codes that decide a row on their own (s3/protocol/error_codec.cc maps both to
// kFailedPrecondition, because retrying does not help; for a reader they mean different things).
constexpr std::string_view kInvalidObjectState = "InvalidObjectState";
constexpr std::string_view kPreconditionFailed = "PreconditionFailed";
constexpr int kHttpPreconditionFailed = 412;

int FailedPreconditionErrno(const StatusDetail& detail) {
  // An archived object that is not restored yet: EACCES, as mountpoint-s3 does for GLACIER
  // objects. `cat` prints "Permission denied", which users of archives already recognise. This
  // row is only reached by a raw GET error; fuse/core answers offline reads per --offline with
  // an explicit errno (EACCES, or EAGAIN / ETIMEDOUT on this code + InvalidObjectState, which
  // the sys_errno rule above keeps because the code is not a network one).
  if (detail.s3_code == kInvalidObjectState) return EACCES;
  // If-Match failed: the object changed (new ETag) under an open handle. ESTALE tells the reader
  // that its view of the file is gone; reopening gets the new object.
  if (detail.s3_code == kPreconditionFailed || detail.http_status == kHttpPreconditionFailed) {
    return ESTALE;
  }
  // Any other "the world must change first" condition has no better POSIX word.
  return EIO;
}

}  // namespace

int StatusToErrno(const Status& status) {
  const StatusDetail& detail = status.detail();
  // The gateway being unreachable after retries is EIO whatever the socket said (issue 3): an
  // ECONNREFUSED or ETIMEDOUT from a TCP connect means nothing to a program reading a file.
  const bool network =
      status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded;
  // Errors that began as an errno (ErrnoToStatus in fuse/core: ESTALE for a forgotten inode,
  // EROFS for a write open, EISDIR, ENOTDIR, ENOSPC) keep it exactly: the code was only a carrier.
  if (!status.ok() && detail.sys_errno > 0 && !network) return detail.sys_errno;

  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kNotFound:
      return ENOENT;  // NoSuchKey, NoSuchBucket, a name not in the listing
    case StatusCode::kPermissionDenied:
      return EACCES;  // AccessDenied (403)
    case StatusCode::kUnauthenticated:
      // SignatureDoesNotMatch, InvalidAccessKeyId: wrong credentials. EACCES rather than EPERM:
      // the file exists but these keys may not read it (issue 3: "wrong credentials -> EACCES").
      return EACCES;
    case StatusCode::kFailedPrecondition:
      return FailedPreconditionErrno(detail);
    case StatusCode::kInvalidArgument:
      return EINVAL;
    case StatusCode::kOutOfRange:
      // fuse/core answers reads at or past EOF with a short or empty read, never an error, so an
      // OutOfRange reaching here is a request the kernel should not have made: EINVAL.
      return EINVAL;
    case StatusCode::kResourceExhausted:
      // Our own buffers or budget (ENOSPC arrives via sys_errno above). ENOMEM lets the reader
      // retry later, like a failed allocation.
      return ENOMEM;
    case StatusCode::kCancelled:
      // The request was interrupted (the kernel sent INTERRUPT, or the daemon is shutting down).
      return EINTR;
    case StatusCode::kUnimplemented:
      return ENOSYS;
    case StatusCode::kAlreadyExists:
      return EEXIST;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      // Gateway unreachable, 5xx or stalled after every retry: EIO, with the reason logged once
      // at WARN by the reply helper. Not EAGAIN: the retries already happened, and EAGAIN makes
      // some readers spin.
      return EIO;
    case StatusCode::kDataLoss:
      return EIO;  // a checksum or length mismatch: the bytes are not to be trusted
    case StatusCode::kAborted:
      // A conflict the client already retried (abseil: retry at a higher level); the reader
      // cannot do better than EIO.
      return EIO;
    case StatusCode::kInternal:
    case StatusCode::kUnknown:
      return EIO;
  }
  return EIO;  // unreachable for valid codes; keeps -Wreturn-type quiet for a corrupted value
}

}  // namespace reelfs::fuse

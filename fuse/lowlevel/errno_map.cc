// The errno table (docs/conventions.md "Errors"): exhaustive switches on the reason, then on the
// code, one comment per judgement call. The same rows are documented in docs/semantics.md
// "## Errors" and tested row by row in tests/unit/fuse/errno_map_test.cc, which also checks that
// the document lists every row.
#include "fuse/lowlevel/errno_map.h"

#include <cerrno>
#include <optional>

namespace reelfs::fuse {
namespace {

bool IsNetworkCode(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded;
}

// The errno a reason decides on its own, whatever code carries it; nullopt: the code decides.
std::optional<int> ReasonErrno(const Status& status) {
  switch (status.reason()) {
    case StatusReason::kNone:
      return std::nullopt;
    case StatusReason::kArchived:
      // An archived object that is not restored yet (a raw GET's InvalidObjectState, or
      // --offline=eacces): EACCES, as mountpoint-s3 does for GLACIER objects. `cat` prints
      // "Permission denied", which users of archives already recognise.
      return EACCES;
    case StatusReason::kArchivedNoWait:
      // Offline and the read does not wait (O_NONBLOCK in every mode, --offline=eagain after the
      // restore request): try again later.
      return EAGAIN;
    case StatusReason::kRestoreTimedOut:
      // --offline=wait past --offline-timeout (kept below the kernel's request timeout).
      return ETIMEDOUT;
    case StatusReason::kRestoreFailed:
      // The restore failed or the object kept going offline: the log line says why.
      return EIO;
    case StatusReason::kObjectChanged:
      // If-Match failed: the object changed (new ETag) under an open handle. ESTALE tells the
      // reader that its view of the file is gone; reopening gets the new object.
      return ESTALE;
    case StatusReason::kTierUnavailable:
    case StatusReason::kRestoreInProgress:
      // Restore answers: the stager and s3::S3Client::RestoreObject act on them, and a reader
      // never meets them; should one arrive, the code decides (EIO, EEXIST).
      return std::nullopt;
    case StatusReason::kWindowQuarantined:
    case StatusReason::kWindowBusy:
      // The prefetcher refetches a refused window over HTTP, so this reaches a reader only if
      // something is wrong with us: EIO.
      return EIO;
    case StatusReason::kStaleInode:
      return ESTALE;  // the kernel holds an inode we forgot (or never had)
    case StatusReason::kReadOnly:
      return EROFS;
    case StatusReason::kNotADirectory:
      return ENOTDIR;
    case StatusReason::kIsADirectory:
      return EISDIR;
    case StatusReason::kNameTooLong:
      return ENAMETOOLONG;
    case StatusReason::kInvalidName:
    case StatusReason::kKnownAbsent:
      // No object can have the name, or the listing says there is none: no such file.
      return ENOENT;
    case StatusReason::kNoSuchAttribute:
      return ENODATA;
    case StatusReason::kBadHandle:
      return EBADF;
    case StatusReason::kNotSupported:
      // EOPNOTSUPP, not ENOSYS: the operation exists, this mount does not offer it (coreutils
      // then stops asking for security.* names per device).
      return EOPNOTSUPP;
    case StatusReason::kBufferTooSmall:
      return ERANGE;  // the getxattr / listxattr size protocol
    case StatusReason::kNotPermitted:
      // --allow-delete / --allow-overwrite not given, or an in-place change of an existing
      // object: EPERM, as mountpoint-s3 answers (the log line names the flag).
      return EPERM;
    case StatusReason::kBusy:
      return EBUSY;  // another handle of this mount is writing the file
    case StatusReason::kFileTooLarge:
      return EFBIG;
    case StatusReason::kNoSpace:
      return ENOSPC;  // the gateway's disk is full (507): the object was not stored
    case StatusReason::kCrossDevice:
      // A directory rename would be one copy and delete per key, not atomic and unbounded:
      // EXDEV makes mv (and every other tool) fall back to copying and deleting, visibly.
      return EXDEV;
    case StatusReason::kTlsUntrusted:
      return EIO;  // the endpoint's certificate: nothing a program reading a file can change
    case StatusReason::kSystemError: {
      // A system call the daemon made failed (ErrnoToStatus): its errno is the most precise
      // answer (ENOSPC, EMFILE, ...), except for the network: a socket errno of a gateway that
      // is unreachable after retries means nothing to a program reading a file (issue 3).
      const int err = status.detail().sys_errno;
      if (err > 0 && !IsNetworkCode(status.code())) return err;
      return std::nullopt;
    }
  }
  return std::nullopt;  // unreachable for valid reasons; the code decides a corrupted value
}

int CodeErrno(StatusCode code) {
  switch (code) {
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
      // Any "the world must change first" condition without a reason (BucketNotEmpty,
      // PermanentRedirect, a restore that ran out of attempts) has no better POSIX word.
      return EIO;
    case StatusCode::kInvalidArgument:
      return EINVAL;
    case StatusCode::kOutOfRange:
      // fuse/core answers reads at or past EOF with a short or empty read, never an error, so an
      // OutOfRange reaching here is a request the kernel should not have made: EINVAL.
      return EINVAL;
    case StatusCode::kResourceExhausted:
      // Our own buffers or budget (ENOSPC from a system call arrives as kSystemError). ENOMEM
      // lets the reader retry later, like a failed allocation.
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

}  // namespace

int StatusToErrno(const Status& status) {
  if (status.ok()) return 0;
  // The reason is the finer word: it was set where the condition was seen (common/status.h).
  if (std::optional<int> err = ReasonErrno(status)) return *err;
  return CodeErrno(status.code());
}

}  // namespace reelfs::fuse

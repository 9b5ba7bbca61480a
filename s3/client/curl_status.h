// The one mapping from libcurl result codes to Status and to retry classes.
//
//   kUnavailable        couldn't resolve/connect, connection reset, send/recv errors, partial body,
//                       empty reply: the server may be back soon (retried).
//   kDeadlineExceeded   connect, idle (low-speed) or total timeout (retried).
//   kFailedPrecondition TLS handshake or certificate verification failed: retrying will not help
//                       until the trust store (ca_bundle) or the server certificate changes. Not
//                       kUnauthenticated, which means bad S3 credentials throughout reelfs.
//   kInvalidArgument    malformed URL, unsupported protocol (a configuration error).
//   kInternal           anything else (out of memory, libcurl misuse).
// Callback aborts (CURLE_WRITE_ERROR, CURLE_ABORTED_BY_CALLBACK, CURLE_READ_ERROR) carry the
// Status the callback recorded instead (cancelled, buffer overflow, sink error).
//
// Thread-safety: pure functions.
#pragma once

#include <curl/curl.h>

#include "common/status.h"
#include "s3/client/retry_policy.h"

namespace reelfs::s3 {

Status CurlToStatus(CURLcode code, const char* error_buffer);
AttemptOutcome::Kind CurlOutcomeKind(CURLcode code);

}  // namespace reelfs::s3

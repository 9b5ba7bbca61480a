// S3 error documents (<Error><Code>..</Code>..</Error>) and their mapping to Status.
//
// The Status code and reason come from the S3 error table shared with rdmaio
// (common/s3_error_table.h, which lists the mapping): e.g. InvalidObjectState is
// kFailedPrecondition + StatusReason::kArchived, SignatureDoesNotMatch kUnauthenticated. The
// reason is set here, once; nothing above reads the S3 code to decide what an error means.
// Detail carries http status, S3 code and request id; for an error document inside a 200 (or
// with no status) it carries the code's AWS status. The code constants (kS3InvalidObjectState,
// ...) are in that header too, so every module spells them once.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/s3_error_table.h"

namespace reelfs::s3 {

struct S3Error {
  int http_status = 0;
  std::string code;  // "NoSuchKey"
  std::string message;
  std::string resource;  // "/bucket/key"
  std::string request_id;
  // Extra members some errors carry (InvalidObjectState: StorageClass, AccessTier).
  std::string storage_class;
  std::string access_tier;
};

// Parses an error body. Malformed XML is an error (the caller then maps by HTTP status alone).
Result<S3Error> ParseErrorXml(std::string_view xml);
std::string EncodeErrorXml(const S3Error& error);

// Builds the Status for a failed response. `error.code` may be empty (HEAD has no body).
Status S3ErrorToStatus(const S3Error& error);

// The HTTP status S3 uses for an error code ("NoSuchKey" -> 404), 500 for unknown codes.
int HttpStatusForErrorCode(std::string_view code);

}  // namespace reelfs::s3

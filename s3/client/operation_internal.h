// Helpers shared by the per-operation files of S3Client (not part of the public API).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>

#include "common/strings.h"
#include "s3/client/transport.h"
#include "s3/object_store.h"
#include "s3/protocol/error_codec.h"

namespace reelfs::s3::internal {

inline HttpRequest MakeRequest(std::string method, std::string bucket, std::string key,
                               std::string what) {
  HttpRequest r;
  r.method = std::move(method);
  r.bucket = std::move(bucket);
  r.key = std::move(key);
  r.what = std::move(what);
  return r;
}

// "Op bucket/key" for messages.
inline std::string What(std::string_view op, std::string_view bucket, std::string_view key = {}) {
  std::string s(op);
  s += ' ';
  s += bucket;
  if (!key.empty()) {
    s += '/';
    s += key;
  }
  return s;
}

// The server broke the protocol: a response this client cannot use (unparsable XML, a
// Content-Range that is not the range asked for, a body longer than it announced). That is
// neither the caller's fault (kInvalidArgument: EINVAL in the mount) nor worth a retry of the
// same exchange: kDataLoss, which the mount answers EIO (docs/semantics.md "## Errors"). `cause`
// (a codec's kInvalidArgument, if any) is kept in the message, and so is the HTTP status: the
// detail carries none, because a Status with an HTTP status reads as an S3 error answer
// (rdmaio's control plane turns it into one for its reply classifier).
inline Status ProtocolViolation(std::string_view what, std::string_view reason, int http_status,
                                const Status& cause = Status::Ok()) {
  std::string message(what);
  message += ": the server's answer (HTTP ";
  message += std::to_string(http_status);
  message += ") breaks the protocol: ";
  message += reason;
  if (!cause.ok()) {
    message += ": ";
    message += cause.message();
  }
  return Status(StatusCode::kDataLoss, std::move(message));
}

// A 2xx GET answer whose ETag is not the one the request was pinned to with If-Match: the server
// ignored If-Match and sent another version of the object. Reported as the 412 the server should
// have sent (kFailedPrecondition + kObjectChanged, PreconditionFailed + HTTP 412 in the detail:
// ESTALE in the mount, the same verdict in rdmaio's reply classifier), never as data; the
// message says what really came.
inline Status PinnedEtagMismatch(std::string_view what, std::string_view pinned,
                                 std::string_view got, int http_status) {
  std::string message(what);
  message += ": the server answered HTTP ";
  message += std::to_string(http_status);
  message +=
      got.empty() ? std::string(" without an ETag") : " with ETag \"" + std::string(got) + "\"";
  message += " to a GET pinned to \"";
  message += pinned;
  message += "\" (it ignored If-Match); the body is dropped and the answer taken as a 412";
  return Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged, std::move(message),
                StatusDetail{.http_status = 412, .s3_code = std::string(kS3PreconditionFailed)});
}

// Completion that only needs the status.
inline HttpCallback StatusOnly(StatusCallback done) {
  return [done = std::move(done)](Result<HttpResponse> r) {
    done(r.ok() ? Status::Ok() : r.status());
  };
}

// Adds x-amz-meta-NAME headers (names lowercased, as S3 stores them).
inline void AddUserMetadata(HttpRequest& r, const std::map<std::string, std::string>& meta) {
  for (const auto& [name, value] : meta) {
    r.headers.emplace_back(Lower("x-amz-meta-" + name), value);
  }
}

// Body validator (HttpRequest::validate) for operations whose 200 may carry an <Error> document
// (CompleteMultipartUpload, CopyObject: S3 sends the status line before it knows the outcome).
// The Status carries the S3 code, so InternalError / SlowDown are retried like a 5xx would be.
inline Status RejectErrorDocument(const HttpResponse& resp) {
  if (resp.body.find("<Error") == std::string::npos) return Status::Ok();
  Result<S3Error> parsed = ParseErrorXml(resp.body);
  if (!parsed.ok()) return Status::Ok();  // not an error document; the operation's parser decides
  S3Error error = std::move(parsed).value();
  error.http_status = HttpStatusForErrorCode(error.code);
  if (error.request_id.empty()) {
    if (const std::string* id = resp.Header("x-amz-request-id")) error.request_id = *id;
  }
  return S3ErrorToStatus(error);
}

}  // namespace reelfs::s3::internal

// Helpers shared by the per-operation files of S3Client (not part of the public API).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>

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

// Completion that only needs the status.
inline HttpCallback StatusOnly(StatusCallback done) {
  return [done = std::move(done)](Result<HttpResponse> r) {
    done(r.ok() ? Status::Ok() : r.status());
  };
}

// Adds x-amz-meta-NAME headers (names lowercased, as S3 stores them).
inline void AddUserMetadata(HttpRequest& r, const std::map<std::string, std::string>& meta) {
  for (const auto& [name, value] : meta) {
    std::string h = "x-amz-meta-" + name;
    for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace_back(std::move(h), value);
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

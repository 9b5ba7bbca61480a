#include "cli/explain.h"

#include <fmt/format.h>

namespace reelfs::cli {
namespace {

std::string Url(const S3Subject& what) { return fmt::format("s3://{}/{}", what.bucket, what.key); }

// "(SignatureDoesNotMatch, request-id R)": what a server operator needs to find the request.
std::string Ids(const Status& s) {
  const StatusDetail& d = s.detail();
  std::string ids = d.s3_code;
  if (!d.request_id.empty()) ids += (ids.empty() ? "" : ", ") + ("request-id " + d.request_id);
  return ids.empty() ? std::string() : " (" + ids + ")";
}

}  // namespace

std::string Explain(const Status& s, const S3Subject& what) {
  const StatusDetail& d = s.detail();
  const std::string& code = d.s3_code;
  if (code == "SignatureDoesNotMatch") {
    return "the server refused the secret key for this access key id" + Ids(s) +
           ": check AWS_SECRET_ACCESS_KEY or the profile's aws_secret_access_key";
  }
  if (code == "InvalidAccessKeyId") {
    return "the server does not know this access key id" + Ids(s) +
           ": check AWS_ACCESS_KEY_ID or the profile's aws_access_key_id";
  }
  if (code == "ExpiredToken" || code == "InvalidToken" || code == "TokenRefreshRequired") {
    return "the server refused the session token" + Ids(s) +
           ": the temporary credentials expired or are malformed";
  }
  if (code == "RequestTimeTooSkewed") {
    return "the server refused the request's time" + Ids(s) +
           ": this machine's clock is more than 15 minutes off";
  }
  if (code == "AccessDenied" || s.code() == StatusCode::kPermissionDenied) {
    return "access denied to " + Url(what) + Ids(s) + ": these credentials may not do this";
  }
  if (code == "NoSuchBucket") {
    return fmt::format("bucket '{}' does not exist{}{}", what.bucket,
                       what.endpoint.empty() ? "" : " at ", what.endpoint) +
           Ids(s);
  }
  if (s.reason() == StatusReason::kArchived) {
    return Url(what) + " is archived on tape and not restored" + Ids(s) + ": run `reelfs stage " +
           Url(what) + "` (or `reelfs stage PATH` on a mount) and read it when it is online";
  }
  const bool from_server = d.http_status != 0 || !code.empty();
  if (s.code() == StatusCode::kNotFound && !what.key.empty() && from_server) {
    return "no such key " + Url(what) + Ids(s);
  }
  if (s.code() == StatusCode::kUnauthenticated) {
    return "the server refused these credentials" + Ids(s) + ": " + std::string(s.message());
  }
  if (s.reason() == StatusReason::kTlsUntrusted) {
    return std::string(s.message()) +
           ": trust its CA with --ca-bundle FILE, AWS_CA_BUNDLE or ca_bundle in ~/.aws/config "
           "(the certificate must name the endpoint's host)";
  }
  if (s.code() == StatusCode::kUnavailable && d.http_status == 0) {
    return (what.endpoint.empty() ? std::string("cannot reach the server")
                                  : fmt::format("cannot reach {}", what.endpoint)) +
           ": " + std::string(s.message());
  }
  // Anything else: the message and the ids, without the code's name.
  std::string text(s.message());
  if (d.http_status != 0) text += fmt::format(" (HTTP {})", d.http_status);
  return text + Ids(s);
}

}  // namespace reelfs::cli

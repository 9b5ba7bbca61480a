#include "gateway/s3api/service.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <optional>
#include <thread>

#include "common/log.h"
#include "common/prom_text.h"
#include "common/strings.h"
#include "gateway/rdma/hook.h"
#include "gateway/s3api/internal.h"
#include "gateway/s3api/metrics_text.h"
#include "gateway/store/key_validation.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"

namespace reelfs::gateway {
namespace s3api {

bool S3Request::Has(std::string_view name) const {
  for (const auto& [n, v] : query) {
    if (n == name) return true;
  }
  return false;
}

std::string S3Request::Query(std::string_view name) const {
  for (const auto& [n, v] : query) {
    if (n == name) return v;
  }
  return {};
}

std::string LogSafe(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 256)) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7F ? '?' : c);
  }
  if (s.size() > 256) out += "...";
  return out;
}

std::string QuoteEtag(std::string_view etag) { return "\"" + std::string(etag) + "\""; }

http::Response XmlResponse(int status, std::string xml) {
  http::Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/xml");
  r.body = std::move(xml);
  return r;
}

http::Response EmptyResponse(int status) {
  http::Response r;
  r.status = status;
  return r;
}

http::Response ErrorResponse(const S3Request& req, std::string_view code, std::string message,
                             int http_status) {
  s3::S3Error err;
  err.code = std::string(code);
  err.http_status = http_status != 0 ? http_status : s3::HttpStatusForErrorCode(code);
  err.message = std::move(message);
  err.resource = req.resource();
  err.request_id = req.http.request_id;
  http::Response r = XmlResponse(err.http_status, s3::EncodeErrorXml(err));
  if (req.is_head()) r.omit_body = true;
  r.log_context = "error=" + err.code;
  REELFS_LOG_DEBUG("gateway", "{} {} {}: {}", req.http.request_id, err.http_status, err.code,
                   LogSafe(err.message));
  return r;
}

http::Response ErrorResponse(const S3Request& req, const Status& status) {
  const StatusDetail& d = status.detail();
  std::string code = d.s3_code;
  if (code.empty() && (d.sys_errno == ENOSPC || d.sys_errno == EDQUOT)) {
    // S3 has no code for this; 507 (RFC 4918) says what happened and SDKs do not retry it,
    // which is right: retrying will not free space. The object at the key is untouched.
    REELFS_LOG_ERROR("gateway", "{} disk full: {}", req.http.request_id, status.ToString());
    return ErrorResponse(req, "InsufficientStorage",
                         "The gateway's disk is full; the object was not stored.", 507);
  }
  if (code.empty() && (d.sys_errno == EMFILE || d.sys_errno == ENFILE || d.sys_errno == ENOMEM)) {
    // Transient exhaustion: SlowDown (503) is what SDKs back off and retry on.
    REELFS_LOG_WARN("gateway", "{} out of resources: {}", req.http.request_id, status.ToString());
    return ErrorResponse(req, "SlowDown", "Please reduce your request rate.", 503);
  }
  if (code.empty()) {
    switch (status.code()) {
      case StatusCode::kNotFound:
        code = req.key.empty() ? "NoSuchBucket" : "NoSuchKey";
        break;
      case StatusCode::kInvalidArgument:
        code = "InvalidArgument";
        break;
      case StatusCode::kPermissionDenied:
      case StatusCode::kUnauthenticated:
        code = "AccessDenied";
        break;
      case StatusCode::kUnimplemented:
        code = "NotImplemented";
        break;
      default:
        code = "InternalError";
        REELFS_LOG_ERROR("gateway", "{} internal error: {}", req.http.request_id,
                         status.ToString());
        break;
    }
  }
  std::string message(status.message());
  if (code == "InternalError") message = "We encountered an internal error. Please try again.";
  return ErrorResponse(req, code, std::move(message), d.http_status);
}

}  // namespace s3api

using s3api::ErrorResponse;
using s3api::LogSafe;
using s3api::S3Request;

namespace {

// Query parameters that are part of an operation we implement (others: 501 NotImplemented).
bool IsKnownParam(std::string_view name) {
  static constexpr std::array<std::string_view, 26> kKnown = {"list-type",
                                                              "prefix",
                                                              "delimiter",
                                                              "max-keys",
                                                              "continuation-token",
                                                              "start-after",
                                                              "fetch-owner",
                                                              "encoding-type",
                                                              "partNumber",
                                                              "uploadId",
                                                              "uploads",
                                                              "delete",
                                                              "restore",
                                                              "x-id",
                                                              "response-content-type",
                                                              "response-content-language",
                                                              "response-expires",
                                                              "response-cache-control",
                                                              "response-content-disposition",
                                                              "response-content-encoding",
                                                              "marker",
                                                              "max-uploads",
                                                              "key-marker",
                                                              "upload-id-marker",
                                                              "max-parts",
                                                              "part-number-marker"};
  if (name.starts_with("X-Amz-")) return true;  // presigned URL parameters
  for (std::string_view k : kKnown) {
    if (k == name) return true;
  }
  return false;
}

std::string HostWithoutPort(const std::string* host) {
  if (host == nullptr) return {};
  std::string h = *host;
  if (!h.empty() && h.front() == '[') return h;  // IPv6 literal: never a virtual host
  size_t colon = h.rfind(':');
  if (colon != std::string::npos) h.resize(colon);
  return Lower(h);
}

// The S3 operation a request is (the names fault scenarios use); mirrors Dispatch.
std::string_view OperationName(const S3Request& req) {
  const std::string& m = req.http.method;
  if (req.bucket.empty()) return "ListBuckets";
  if (req.key.empty()) {
    if (m == "GET" && req.Has("uploads")) return "ListMultipartUploads";
    if (m == "GET") return req.Query("list-type") == "2" ? "ListObjectsV2" : "ListObjects";
    if (m == "HEAD") return "HeadBucket";
    if (m == "PUT") return "CreateBucket";
    if (m == "DELETE") return "DeleteBucket";
    if (m == "POST" && req.Has("delete")) return "DeleteObjects";
    return "Other";
  }
  if (m == "GET") return req.Has("uploadId") ? "ListParts" : "GetObject";
  if (m == "HEAD") return "HeadObject";
  if (m == "PUT") {
    if (req.Has("uploadId") || req.Has("partNumber")) {
      return req.Header("x-amz-copy-source") ? "UploadPartCopy" : "UploadPart";
    }
    return req.Header("x-amz-copy-source") ? "CopyObject" : "PutObject";
  }
  if (m == "POST") {
    if (req.Has("uploads")) return "CreateMultipartUpload";
    if (req.Has("uploadId")) return "CompleteMultipartUpload";
    if (req.Has("restore")) return "RestoreObject";
  }
  if (m == "DELETE") return req.Has("uploadId") ? "AbortMultipartUpload" : "DeleteObject";
  return "Other";
}

s3api::Started Dispatch(s3api::Context ctx, S3Request req) {
  using namespace s3api;  // NOLINT(google-build-using-namespace)
  const std::string& m = req.http.method;
  for (const auto& [name, value] : req.query) {
    if (!IsKnownParam(name)) {
      return ErrorResponse(req, "NotImplemented",
                           "subresource '" + LogSafe(name) + "' is not implemented", 501);
    }
  }
  if (req.bucket.empty()) {
    if (m == "GET") return ListBuckets(ctx, req);
    return ErrorResponse(req, "MethodNotAllowed", "method not allowed on the service", 405);
  }
  if (req.key.empty()) {
    if (m == "GET") {
      if (req.Query("list-type") == "2") return ListObjectsV2(ctx, req);
      if (req.Has("uploads")) return ListMultipartUploads(ctx, req);
      return ListObjectsV1(ctx, req);
    }
    if (m == "HEAD") return HeadBucket(ctx, req);
    if (m == "PUT") return CreateBucket(ctx, std::move(req));
    if (m == "DELETE") return DeleteBucket(ctx, req);
    if (m == "POST" && req.Has("delete")) return DeleteObjects(ctx, std::move(req));
    return ErrorResponse(req, "MethodNotAllowed", "method not allowed on a bucket", 405);
  }
  if (m == "GET" || m == "HEAD") {
    if (req.Has("uploadId")) {
      if (m == "HEAD") {
        return ErrorResponse(req, "MethodNotAllowed", "HEAD is not allowed on an upload", 405);
      }
      return ListParts(ctx, req);
    }
    return GetObject(ctx, req);
  }
  if (m == "PUT") {
    if (req.Has("uploadId") || req.Has("partNumber")) {
      if (req.Header("x-amz-copy-source")) return UploadPartCopy(ctx, req);
      return UploadPart(ctx, std::move(req));
    }
    if (req.Header("x-amz-copy-source")) return CopyObject(ctx, req);
    return PutObject(ctx, std::move(req));
  }
  if (m == "POST") {
    if (req.Has("uploads")) return CreateMultipartUpload(ctx, req);
    if (req.Has("uploadId")) return CompleteMultipartUpload(ctx, std::move(req));
    if (req.Has("restore")) return RestoreObject(ctx, std::move(req));
    return ErrorResponse(req, "NotImplemented",
                         "POST on an object without ?uploads, ?uploadId "
                         "or ?restore is not implemented",
                         501);
  }
  if (m == "DELETE") {
    if (req.Has("uploadId")) return AbortMultipartUpload(ctx, req);
    return DeleteObject(ctx, req);
  }
  return ErrorResponse(req, "MethodNotAllowed", "method not allowed on an object", 405);
}

// A PutObject / UploadPart carrying x-amz-rdma-token: its body comes by RDMA READ from the
// client's window (docs/protocols/rdma-put.md, session PUT). Such a request has an empty body, so
// it must never reach the HTTP upload path: that would store a 0-byte object.
s3api::Started RdmaPut(s3api::Context ctx, RdmaHook* rdma, const S3Request& req) {
  using namespace s3api;  // NOLINT(google-build-using-namespace)
  if (rdma == nullptr) {
    return ErrorResponse(req, "InvalidArgument",
                         "x-amz-rdma-token on a PUT: this gateway does not serve S3 over RDMA "
                         "(start it with --rdma); nothing was stored",
                         400);
  }
  for (const auto& [name, value] : req.query) {
    if (!IsKnownParam(name)) {
      return ErrorResponse(req, "NotImplemented",
                           "subresource '" + LogSafe(name) + "' is not implemented", 501);
    }
  }
  if (req.Header("x-amz-copy-source") != nullptr) {
    return ErrorResponse(req, "InvalidArgument", "a copy does not take x-amz-rdma-token", 400);
  }
  if (req.http.has_body) {
    return ErrorResponse(req, "InvalidArgument",
                         "an RDMA PUT carries no body (the gateway reads it by RDMA)", 400);
  }
  const std::string* size_text = req.Header("x-amz-rdma-size");
  uint64_t size = 0;
  if (size_text != nullptr) {
    auto [p, ec] = std::from_chars(size_text->data(), size_text->data() + size_text->size(), size);
    if (ec != std::errc() || p != size_text->data() + size_text->size()) size = 0;
  }
  if (size == 0) {
    return ErrorResponse(req, "InvalidArgument",
                         "an RDMA PUT needs x-amz-rdma-size: the payload bytes (1 or more)", 400);
  }
  if (size > ctx.options.max_put_size) {
    return ErrorResponse(req, "EntityTooLarge",
                         "Your proposed upload exceeds the maximum allowed object size.", 413);
  }
  const bool part = req.Has("uploadId") || req.Has("partNumber");
  RdmaPutPlan plan = part ? PlanUploadPart(ctx, req) : PlanPutObject(ctx, req);
  if (auto* refused = std::get_if<http::Response>(&plan)) return std::move(*refused);
  return rdma->ServePut(req.http, size, std::get<RdmaPutCommit>(std::move(plan)));
}

// PREPARE with op PUT: the same checks as the PUT itself, on a request made of the PREPARE's
// headers (Content-Type, x-amz-meta-*, x-amz-storage-class) and its target.
RdmaPutPlan PlanPreparedPut(s3api::Context ctx, const http::Request& prepare,
                            const RdmaTarget& target, uint64_t size) {
  using namespace s3api;  // NOLINT(google-build-using-namespace)
  S3Request req;
  req.http = prepare;
  req.http.method = "PUT";
  req.bucket = target.bucket;
  req.key = target.key;
  if (target.is_part()) {
    req.query = {{"partNumber", std::to_string(target.part_number)},
                 {"uploadId", target.upload_id}};
  }
  if (size > ctx.options.max_put_size) {
    return ErrorResponse(req, "EntityTooLarge",
                         "Your proposed upload exceeds the maximum allowed object size.", 413);
  }
  return target.is_part() ? PlanUploadPart(ctx, req) : PlanPutObject(ctx, req);
}

}  // namespace

S3Service::S3Service(Store& store, ServiceOptions options, Archive* archive, FaultInjector* faults)
    : store_(store), options_(std::move(options)), archive_(archive), faults_(faults) {}

http::Response S3Service::InternalError(const http::Request& request, std::string_view what) {
  REELFS_LOG_ERROR("gateway", "{} internal error: {}", request.request_id, LogSafe(what));
  S3Request req;
  req.http.method = request.method;
  req.http.request_id = request.request_id;
  return ErrorResponse(req, "InternalError", "We encountered an internal error. Please try again.",
                       500);
}

http::Response S3Service::BadRequest(const http::Request& request, std::string_view what) {
  REELFS_LOG_DEBUG("gateway", "{} malformed HTTP request: {}", request.request_id, LogSafe(what));
  S3Request req;
  req.http.method = request.method;
  req.http.request_id = request.request_id;
  return ErrorResponse(req, "BadRequest", "An error occurred when parsing the HTTP request.", 400);
}

void S3Service::Finished(std::string_view method, int status, uint64_t bytes_in, uint64_t bytes_out,
                         double seconds) noexcept {
  try {
    http_metrics_.Record(method, status, bytes_in, bytes_out, seconds);
  } catch (...) {
    // Metrics only (an allocation failure): the request was answered already.
  }
}

http::Handler::Started S3Service::Start(http::Request request) {
  S3Request req;
  req.http = std::move(request);
  std::string_view target = req.http.target;
  size_t qpos = target.find('?');
  std::string encoded_path(target.substr(0, qpos));
  std::string raw_query(qpos == std::string_view::npos ? "" : target.substr(qpos + 1));
  if (encoded_path.empty() || encoded_path.front() != '/') {
    return ErrorResponse(req, "InvalidURI", "Couldn't parse the specified URI.", 400);
  }
  auto decoded = s3::UriDecode(encoded_path);
  if (!decoded.ok())
    return ErrorResponse(req, "InvalidURI", "Couldn't parse the specified URI.", 400);
  auto query = s3::ParseQuery(raw_query);
  if (!query.ok()) return ErrorResponse(req, "InvalidArgument", "malformed query string", 400);
  req.query = std::move(*query);

  // Bucket and key: virtual-host style when Host is <bucket>.<domain>, else path style.
  std::string host = HostWithoutPort(req.Header("host"));
  const std::string& domain = options_.virtual_host_domain;
  if (!domain.empty() && host.size() > domain.size() + 1 && host.ends_with("." + domain)) {
    req.bucket = host.substr(0, host.size() - domain.size() - 1);
    req.key = decoded->substr(1);
  } else {
    std::string_view path = std::string_view(*decoded).substr(1);
    size_t slash = path.find('/');
    req.bucket = std::string(path.substr(0, slash));
    if (slash != std::string_view::npos) req.key = std::string(path.substr(slash + 1));
  }

  // Prometheus scrapes sign nothing: an unsigned GET /metrics (no Authorization header, no query)
  // is the exposition, and says nothing about the namespace. A signed request for a bucket named
  // "metrics" is S3 as always; an unsigned one would be refused anyway.
  if (req.http.method == "GET" && encoded_path == "/metrics" && raw_query.empty() &&
      req.http.Find("authorization") == nullptr) {
    const s3api::Context ctx{store_, options_, archive_, faults_};
    http::Response r;
    r.status = 200;
    r.headers.emplace_back("Content-Type", std::string(kPromContentType));
    r.body = s3api::PrometheusText(ctx, http_metrics_);
    r.log_context = "op=Metrics";
    return r;
  }

  // Authentication first: nothing about the namespace is revealed to unsigned requests.
  s3::SignableRequest signable;
  signable.method = req.http.method;
  signable.encoded_path = encoded_path;
  signable.raw_query = raw_query;
  signable.headers = req.http.headers;
  auto lookup = [this](std::string_view access_key) -> std::optional<std::string> {
    if (access_key == options_.access_key) return options_.secret_key;
    return std::nullopt;
  };
  s3::VerifyOptions verify;
  verify.max_skew = options_.max_clock_skew;
  verify.expected_region = options_.region;  // a credential scope for another region is refused
  verify.expected_service = "s3";
  auto verified = s3::VerifyRequest(signable, lookup, std::chrono::system_clock::now(), verify);
  if (!verified.ok()) {
    std::string code = verified.status().detail().s3_code;
    if (code.empty()) code = "AccessDenied";
    return ErrorResponse(req, code, std::string(verified.status().message()));
  }
  req.auth = std::move(*verified);
  // A request without a body that claims the hash of one: the body exchanges check every body,
  // this is the check for the requests that have none (AWS answers the same).
  if (!req.http.has_body &&
      s3::ClassifyPayloadClaim(req.auth.payload_hash) == s3::PayloadClaim::kSha256) {
    if (Lower(req.auth.payload_hash) != s3::kEmptyPayloadSha256) {
      return ErrorResponse(req, "XAmzContentSHA256Mismatch",
                           "The provided 'x-amz-content-sha256' header does not match what was "
                           "computed.",
                           400);
    }
  }
  const s3api::Context ctx{store_, options_, archive_, faults_};

  // S3 over RDMA control (hipobj-rc-v2): ".hipobj-rc" is not a valid bucket name either.
  if (rdma_ != nullptr && req.bucket == ".hipobj-rc") {
    return rdma_->Control(
        req.http, req.key,
        [ctx](const http::Request& prepare, const RdmaTarget& named, uint64_t size) {
          return PlanPreparedPut(ctx, prepare, named, size);
        });
  }

  // Admin endpoints (docs/protocols/admin.md): "_reelfs" is not a valid bucket name, so no
  // bucket can shadow them; they are signed like every other request.
  if (req.bucket == "_reelfs" && req.key.starts_with("admin/")) {
    std::string name = req.key.substr(6);
    s3api::Started started = s3api::Admin(ctx, req, name);
    if (auto* r = std::get_if<http::Response>(&started)) {
      if (r->log_context.empty()) r->log_context = "op=Admin";
    }
    return started;
  }

  if (!req.bucket.empty()) {
    Status st = ValidateBucketName(req.bucket);
    if (!st.ok()) return ErrorResponse(req, st);
  }
  if (!req.key.empty()) {
    Status st = ValidateObjectKey(req.key);
    if (!st.ok()) return ErrorResponse(req, st);
  }
  std::string log_context = "bucket=" + LogSafe(req.bucket) + " key=" + LogSafe(req.key);
  FaultInjector::Decision fault;
  if (faults_ != nullptr) {
    const std::string_view op = OperationName(req);
    fault = faults_->Decide(op);
    // A slow answer: the io thread sleeps, like a server busy elsewhere (reference gateway).
    if (fault.delay.count() > 0) std::this_thread::sleep_for(fault.delay);
    if (!fault.error.empty()) {
      int status = s3::HttpStatusForErrorCode(fault.error);
      if (fault.error == "SlowDown" || fault.error == "ServiceUnavailable") status = 503;
      http::Response r = ErrorResponse(req, fault.error,
                                       fault.error == "SlowDown"
                                           ? "Please reduce your request rate."
                                           : "Injected fault (reelfs-gateway fault scenario).",
                                       status);
      r.log_context = log_context + " op=" + std::string(op) + " fault=" + fault.error;
      return r;
    }
  }
  // A GET carrying an RDMA token: the RDMA server turns the plain answer into a transfer.
  std::optional<http::Request> rdma_get;
  if (rdma_ != nullptr && req.http.method == "GET" && !req.key.empty() &&
      req.Header("x-amz-rdma-token") != nullptr) {
    rdma_get = req.http;
  }
  const bool rdma_put =
      req.http.method == "PUT" && !req.key.empty() && req.Header("x-amz-rdma-token") != nullptr;
  s3api::Started started = rdma_put ? RdmaPut(ctx, rdma_, req) : Dispatch(ctx, std::move(req));
  if (auto* r = std::get_if<http::Response>(&started); r != nullptr && rdma_get) {
    // The access-log context travels with the plain answer into the (maybe deferred) final one.
    r->log_context = log_context + (r->log_context.empty() ? "" : " " + r->log_context);
    *r = rdma_->ServeGet(*rdma_get, std::move(*r));
    return started;
  }
  if (auto* r = std::get_if<http::Response>(&started)) {
    r->log_context = log_context + (r->log_context.empty() ? "" : " " + r->log_context);
    if (fault.reset_after.has_value() && r->stream && !r->omit_body &&
        *fault.reset_after < r->stream_length) {
      r->stream = CutAfter(std::move(r->stream), *fault.reset_after);
      r->log_context += " fault=reset";
    }
  }
  return started;
}

}  // namespace reelfs::gateway

#include "rdmaio/s3bridge/s3_control_plane.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "s3/client/endpoint_set.h"
#include "s3/client/object_headers.h"
#include "s3/client/request_target.h"

namespace reelfs::rdmaio::s3bridge {
namespace {

constexpr std::string_view kRdmaHeaderPrefix = "x-amz-rdma-";

// An error answer (the Status carries the HTTP status) is a reply for the classifier, with the
// s3 layer's Status itself riding along unchanged (code, reason, detail) for the channel to
// report; anything else is "no answer".
Result<ControlReply> ReplyFromStatus(Status status) {
  if (status.detail().http_status == 0) return status;
  ControlReply reply;
  reply.http_status = status.detail().http_status;
  reply.s3_error_code = status.detail().s3_code;
  reply.error = std::move(status);
  return reply;
}

// A 2xx answer of the control transport: its status, x-amz-rdma-* headers and ETag.
ControlReply ReplyFromResponse(const s3::HttpResponse& resp) {
  ControlReply reply;
  reply.http_status = resp.status;
  for (const auto& [name, value] : resp.headers) {
    if (name.starts_with(kRdmaHeaderPrefix)) reply.rdma_headers.emplace_back(name, value);
  }
  if (const std::string* etag = resp.Header("etag")) reply.etag = s3::StripEtag(*etag);
  return reply;
}

}  // namespace

Result<std::unique_ptr<S3ControlPlane>> S3ControlPlane::Create(
    std::shared_ptr<s3::ObjectStore> store, const s3::ClientOptions& options,
    std::string endpoint) {
  if (!store) return Status::InvalidArgument("S3ControlPlane: no object store");
  if (options.endpoint.empty()) {
    return Status::InvalidArgument("S3ControlPlane: RDMA needs an explicit endpoint");
  }
  s3::TransportOptions t;
  // Several front ends: one plane per endpoint (cli/rdma_data_path.cc spreads fetches over them).
  const std::vector<std::string> urls = s3::EndpointSet::SplitList(options.endpoint);
  if (urls.empty()) return Status::InvalidArgument("S3ControlPlane: no endpoint");
  if (endpoint.empty()) endpoint = urls.front();
  if (std::find(urls.begin(), urls.end(), endpoint) == urls.end()) {
    return Status::InvalidArgument("S3ControlPlane: " + endpoint + " is not one of the endpoints");
  }
  REELFS_ASSIGN_OR_RETURN(t.endpoint, s3::ParseEndpoint(endpoint));
  t.addressing = s3::Addressing::kPath;  // "/.hipobj-rc/prepare" is a path, not a bucket
  t.region = options.region;
  t.credentials = options.credentials;
  t.credential_source = options.credential_source;
  t.max_connections = 8;
  t.connect_timeout = options.connect_timeout;
  t.idle_timeout = options.idle_timeout;
  t.total_timeout = options.total_timeout;
  t.retry.max_attempts = 1;
  t.ca_bundle = options.ca_bundle;
  t.verify_tls = options.verify_tls;
  t.user_agent = options.user_agent.empty() ? "reelfs/0.1" : options.user_agent;
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<s3::Transport> control, s3::Transport::Create(t));
  return std::unique_ptr<S3ControlPlane>(new S3ControlPlane(std::move(store), std::move(control),
                                                            std::move(endpoint), urls.size() > 1));
}

void S3ControlPlane::Get(ControlGet request, ControlCallback done) {
  if (request.length == 0) {
    done(Status::InvalidArgument("ControlPlane::Get: empty range"));
    return;
  }
  s3::GetObjectRequest req;
  req.bucket = std::move(request.bucket);
  req.key = std::move(request.key);
  req.range = s3::ByteRange{request.offset, request.length};
  req.buffer =
      request.destination.first(std::min<size_t>(request.destination.size(), request.length));
  req.if_match = std::move(request.if_match);
  req.cancel = std::move(request.cancel);
  req.extra_headers = std::move(request.headers);
  // A GET with a token goes to the gateway of its session; a plain one (the HTTP fallback) may be
  // served by any endpoint and fail over like every other read.
  if (pin_gets_ && !req.extra_headers.empty()) req.endpoint = endpoint_;
  store_->GetObject(req, [done = std::move(done)](Result<s3::GetObjectResult> result) {
    if (!result.ok()) return done(ReplyFromStatus(std::move(result).status()));
    ControlReply reply;
    // The answer's own status. A store that does not say (0) handed over a success, and the
    // classifier treats every 2xx of a GET alike.
    reply.http_status = result->http_status != 0 ? result->http_status : 200;
    reply.rdma_headers = std::move(result->rdma_headers);
    reply.etag = result->info.etag;
    reply.body_bytes = result->bytes;
    reply.object_size = result->object_size;
    done(std::move(reply));
  });
}

void S3ControlPlane::Put(ControlPut request, ControlCallback done) {
  if (request.part_number < 0 || request.part_number > 10000) {
    done(Status::InvalidArgument("ControlPlane::Put: part number must be 1..10000"));
    return;
  }
  const bool part = request.part_number > 0;
  if (request.headers.empty()) {
    // A plain upload (the HTTP fallback): the store's PUT, with its retries, connections and
    // signing. Its answer carries nothing the channel needs beyond the ETag.
    auto reply_etag = [done = std::move(done)](Result<std::string> etag) {
      if (!etag.ok()) return done(ReplyFromStatus(std::move(etag).status()));
      done(ControlReply{.http_status = 200, .etag = std::move(*etag)});
    };
    if (part) {
      s3::UploadPartRequest req;
      req.bucket = std::move(request.bucket);
      req.key = std::move(request.key);
      req.upload_id = std::move(request.upload_id);
      req.part_number = request.part_number;
      req.body = request.body;
      store_->UploadPart(req, std::move(reply_etag));
    } else {
      s3::PutObjectRequest req;
      req.bucket = std::move(request.bucket);
      req.key = std::move(request.key);
      req.body = request.body;
      req.content_type = std::move(request.content_type);
      store_->PutObject(req, std::move(reply_etag));
    }
    return;
  }
  // An RDMA PUT: sent once, and its x-amz-rdma-* answer headers are the verdict (reply, byte
  // count, cookie echo), which the store's PUT does not hand back; so it goes through the control
  // transport like the POSTs.
  s3::HttpRequest r;
  r.method = "PUT";
  r.bucket = std::move(request.bucket);
  r.key = std::move(request.key);
  if (part) {
    r.query.emplace_back("partNumber", std::to_string(request.part_number));
    r.query.emplace_back("uploadId", std::move(request.upload_id));
  }
  r.headers = std::move(request.headers);
  if (!request.content_type.empty() && !part) {
    r.headers.emplace_back("content-type", std::move(request.content_type));
  }
  r.body = request.body;
  r.cancel = std::move(request.cancel);
  r.single_attempt = true;
  r.what = std::string(part ? "UploadPart " : "PutObject ") + r.bucket + "/" + r.key;
  control_->Submit(std::move(r), [done = std::move(done)](Result<s3::HttpResponse> resp) {
    if (!resp.ok()) return done(ReplyFromStatus(std::move(resp).status()));
    done(ReplyFromResponse(*resp));
  });
}

void S3ControlPlane::Post(ControlPost request, ControlCallback done) {
  // "/.hipobj-rc/prepare" is sent path-style as bucket ".hipobj-rc", key "prepare", which signs
  // and encodes to exactly that path.
  std::string_view path = request.path;
  if (!path.starts_with('/') || path.find('/', 1) == std::string_view::npos) {
    done(Status::InvalidArgument("ControlPlane::Post: path must be /segment/rest"));
    return;
  }
  const size_t slash = path.find('/', 1);
  s3::HttpRequest r;
  r.method = "POST";
  r.bucket = std::string(path.substr(1, slash - 1));
  r.key = std::string(path.substr(slash + 1));
  r.headers = std::move(request.headers);
  r.what = "POST " + request.path;
  control_->Submit(std::move(r), [done = std::move(done)](Result<s3::HttpResponse> resp) {
    if (!resp.ok()) return done(ReplyFromStatus(std::move(resp).status()));
    done(ReplyFromResponse(*resp));
  });
}

}  // namespace reelfs::rdmaio::s3bridge

// GetObject: a large ranged GET into a buffer over plain http is the direct receiver's
// (direct_get.h: recv(2) into the buffer); otherwise the body goes from libcurl's write callback
// into the caller's buffer (or sink), and retries resume after the bytes already delivered
// (transport.cc).
//
// A request with extra headers (S3 over RDMA, rdmaio) is different: the server may answer with an
// empty body because the bytes went over RDMA, which the streamed path would take for a broken
// transfer and resume. So its body (if any: a decline or a server that ignored the token) is
// collected whole and copied into the buffer here.
#include <algorithm>
#include <cstring>

#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/range.h"

namespace reelfs::s3 {
namespace {

constexpr std::string_view kRdmaHeaderPrefix = "x-amz-rdma-";

std::vector<std::pair<std::string, std::string>> RdmaHeaders(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : headers) {
    if (name.starts_with(kRdmaHeaderPrefix)) out.emplace_back(name, value);
  }
  return out;
}

// The collected body of a request with extra headers, placed into the caller's buffer: a 206 is
// the range itself; a 200 is the whole object, sliced to the range asked for.
//
// As the streamed path does (transport.cc), the answer is checked before a byte is copied: a
// different ETag than the pinned one is ESTALE's kFailedPrecondition (an ETag-less answer is
// accepted here: its data may have gone over RDMA, and rdmaio's reply classifier and fuse/core
// judge that), a Content-Range that is not the range asked for, or a body longer than it, is a
// protocol violation (kDataLoss).
Result<GetObjectResult> CopyCollectedBody(const GetObjectRequest& req, HttpResponse& resp) {
  GetObjectResult out;
  std::string_view body = resp.body;
  const std::string what = internal::What("GetObject", req.bucket, req.key);
  if (!req.if_match.empty()) {
    const std::string* etag = resp.Header("etag");
    if (etag != nullptr && StripEtag(*etag) != StripEtag(req.if_match)) {
      return internal::PinnedEtagMismatch(what, StripEtag(req.if_match), StripEtag(*etag),
                                          resp.status);
    }
  }
  if (resp.status == 206) {
    if (const std::string* cr = resp.Header("content-range")) {
      auto parsed = ParseContentRange(*cr);
      if (!parsed.ok()) {
        return internal::ProtocolViolation(what, "unparsable Content-Range", resp.status,
                                           parsed.status());
      }
      const uint64_t want = req.range ? req.range->offset : 0;
      const uint64_t span = parsed->last >= parsed->first ? parsed->last - parsed->first + 1 : 0;
      if (parsed->first != want || span == 0 || (req.range && span > req.range->length) ||
          (parsed->total_known && parsed->last >= parsed->total) ||
          (!body.empty() && body.size() != span)) {
        return internal::ProtocolViolation(
            what, "Content-Range '" + *cr + "' is not the range asked for", resp.status);
      }
      out.object_size = parsed->total_known ? parsed->total : 0;
    }
  } else if (!body.empty() || req.range) {
    // A 200: the whole object (a server that ignored Range, or no range asked for). With an
    // empty body the size is unknown (the data may have gone over RDMA), so it stays 0 unless
    // the Content-Length says more.
    const std::string* cl = resp.Header("content-length");
    out.object_size = cl ? std::strtoull(cl->c_str(), nullptr, 10) : body.size();
    if (req.range && !body.empty()) {
      const uint64_t first = std::min<uint64_t>(req.range->offset, body.size());
      body = body.substr(first, std::min<uint64_t>(req.range->length, body.size() - first));
    }
  }
  if (body.size() > req.buffer.size()) {
    // The buffer holds the range asked for: a longer body is the server's doing.
    return internal::ProtocolViolation(what,
                                       "body (" + std::to_string(body.size()) +
                                           " bytes) is longer than the range asked for (" +
                                           std::to_string(req.buffer.size()) + " bytes)",
                                       resp.status);
  }
  std::memcpy(req.buffer.data(), body.data(), body.size());
  out.bytes = body.size();
  return out;
}

}  // namespace

void S3Client::GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  if (req.range && req.range->length == 0) {
    done(Status::InvalidArgument("GetObject: empty range"));
    return;
  }
  if (direct_ != nullptr && direct_->Takes(req)) return direct_->Submit(req, std::move(done));
  GetObjectOverTransport(req, std::move(done));
}

void S3Client::GetObjectOverTransport(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  const bool collect = !req.extra_headers.empty();
  if (collect && req.sink) {
    done(Status::InvalidArgument("GetObject: extra headers need a buffer, not a sink"));
    return;
  }
  HttpRequest r = internal::MakeRequest("GET", req.bucket, req.key,
                                        internal::What("GetObject", req.bucket, req.key));
  if (!req.endpoint.empty()) {
    r.endpoint = transports_.front()->options().endpoints->IndexOf(req.endpoint);
    if (!r.endpoint) {
      done(Status::InvalidArgument("GetObject: " + req.endpoint + " is not one of the endpoints"));
      return;
    }
  }
  r.stream_body = !collect;
  r.single_attempt = collect;
  if (!collect) {
    r.buffer = req.buffer;
    r.sink = req.sink;
  }
  r.range = req.range;
  r.cancel = req.cancel;
  if (!req.if_match.empty()) {
    r.headers.emplace_back("if-match", "\"" + StripEtag(req.if_match) + "\"");
    r.pinned_etag = StripEtag(req.if_match);
  }
  for (const auto& header : req.extra_headers) r.headers.push_back(header);
  // With extra headers the request is copied into the completion: its buffer and range place the
  // collected body.
  std::optional<GetObjectRequest> keep;
  if (collect) keep = req;
  PickTransport().Submit(std::move(r), [done = std::move(done), key = req.key,
                                        keep = std::move(keep)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    GetObjectResult out;
    if (keep) {
      auto copied = CopyCollectedBody(*keep, *resp);
      if (!copied.ok()) return done(copied.status());
      out = std::move(copied).value();
    } else {
      out.bytes = resp->streamed_bytes;
      // The transport knows the object's size from Content-Range's total, a 200's length, or the
      // end of a chunked 200. A 206 with "bytes a-b/*" leaves it unknown (0): the part's
      // Content-Length is not the object's size, and a guess would mislead the caller.
      out.object_size = resp->object_size;
    }
    out.info = ObjectInfoFromHeaders(resp->headers, key);
    out.info.size = out.object_size;
    out.http_status = resp->status;
    out.rdma_headers = RdmaHeaders(resp->headers);
    done(std::move(out));
  });
}

}  // namespace reelfs::s3

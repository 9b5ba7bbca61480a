#include "rdmaio/channel/channel_replies.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/s3_error_table.h"

namespace reelfs::rdmaio::channel {

wire::ReplyVerdict ClassifyDataGetReply(const ControlReply& reply, uint64_t offset,
                                        uint64_t length) {
  wire::ReplyInput input;
  input.op = wire::RdmaOp::kGet;
  input.http_status = reply.http_status;
  wire::FillReplyHeaders(reply.rdma_headers, &input);
  input.body_length = reply.body_bytes;
  input.s3_error_code = reply.s3_error_code;
  input.etag = reply.etag;
  input.expected_bytes =
      reply.object_size == 0
          ? length
          : (offset < reply.object_size ? std::min(length, reply.object_size - offset) : 0);
  return wire::ClassifyReply(input);
}

Status ErrorFromReply(const ControlReply& reply, std::string_view what) {
  // The control plane's own reading of the answer (S3ControlPlane: the s3 layer's Status) goes up
  // unchanged: code, reason and detail were decided where the answer was parsed.
  if (!reply.error.ok()) return reply.error.WithContext(what);
  const std::string message =
      fmt::format("{}: HTTP {} {}", what, reply.http_status, reply.s3_error_code);
  StatusDetail detail{.http_status = reply.http_status, .s3_code = reply.s3_error_code};
  if (IsSuccess(reply.http_status)) {
    // A 2xx the classifier would not use (a contradictory control answer): the server broke the
    // protocol, which the mount answers EIO, as for the same fault over HTTP.
    return Status(StatusCode::kDataLoss, message, std::move(detail));
  }
  // The same table as an answer over HTTP (common/s3_error_table.h), so a bad signature is
  // kUnauthenticated and an archived object kFailedPrecondition + kArchived on both paths.
  const S3ErrorClass kind = ClassifyS3Error(reply.http_status, reply.s3_error_code);
  return Status(kind.code, kind.reason, message, std::move(detail));
}

Result<ControlGet> HttpFallbackGet(const FetchRequest& request, std::string_view what) {
  const RegisteredWindow& window = request.window;
  const std::span<std::byte> host = window.region->host_bytes();
  if (host.empty()) {
    return Status::Unimplemented(std::string(what) +
                                 ": HTTP fallback into device memory is not supported");
  }
  ControlGet get;
  get.bucket = request.bucket;
  get.key = request.key;
  get.offset = request.object_offset;
  get.length = window.length;
  get.if_match = request.if_match;
  get.destination = host.subspan(window.offset, window.length);
  get.cancel = request.cancel;
  return get;
}

Result<FetchResult> HttpFallbackResult(const Result<ControlReply>& reply, std::string_view what) {
  if (!reply.ok()) return reply.status().WithContext(std::string(what));
  if (!IsSuccess(reply->http_status)) return ErrorFromReply(*reply, what);
  return FetchResult{.bytes = reply->body_bytes,
                     .object_size = reply->object_size,
                     .etag = reply->etag,
                     .via = DataPath::kHttp};
}

}  // namespace reelfs::rdmaio::channel

#include "rdmaio/wire/reply_classifier.h"

#include <string>
#include <utility>

#include "common/s3_error_table.h"
#include "common/strings.h"
#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire {
namespace {

ReplyVerdict Verdict(ReplyKind kind, NextStep next, EndpointSignal endpoint, bool fence,
                     std::string reason) {
  ReplyVerdict v;
  v.kind = kind;
  v.next = next;
  v.endpoint = endpoint;
  v.fence_window = fence;
  v.reason = std::move(reason);
  return v;
}

// Malformed or contradictory: we cannot tell what reached the window, so fence it and get the
// bytes over HTTP; count it against the endpoint like any failed attempt.
ReplyVerdict Violation(std::string reason) {
  return Verdict(ReplyKind::kProtocolViolation, NextStep::kRetryOverHttp, EndpointSignal::kFailed,
                 true, "protocol violation: " + std::move(reason));
}

std::string Http(int status) { return "HTTP " + std::to_string(status); }

// The byte count the server reports: the current header name first, the older one second.
Result<std::optional<uint64_t>> ReportedBytes(const ReplyInput& in) {
  for (const std::optional<std::string_view>& value : {in.bytes_transferred, in.bytes_legacy}) {
    if (!value) continue;
    REELFS_ASSIGN_OR_RETURN(uint64_t bytes, ParseBytesTransferred(*value));
    return std::optional<uint64_t>(bytes);
  }
  return std::optional<uint64_t>();
}

ReplyVerdict ClassifyHttpError(const ReplyInput& in) {
  const int s = in.http_status;
  if (s == 400) {
    return Verdict(ReplyKind::kTokenRejected, NextStep::kRetryOverHttp, EndpointSignal::kDeclined,
                   false, Http(s) + " with a token: the server rejects our token");
  }
  if (s == 501) {
    return Verdict(ReplyKind::kRdmaUnsupported, NextStep::kRetryOverHttp, EndpointSignal::kDeclined,
                   false, Http(s) + ": RDMA not supported for " + std::string(RdmaOpName(in.op)));
  }
  if (s == 503 || s == 413) {
    // Admission refusals (Ceph: buffers busy or transfer larger than a buffer; hipobj limits):
    // nothing was transferred and the endpoint still does RDMA.
    return Verdict(ReplyKind::kServerBusy, NextStep::kRetryOverHttp, EndpointSignal::kNone, false,
                   Http(s) + ": server RDMA resources exhausted or request over its limit");
  }
  if (s >= 500 && s < 600) {
    // vgwrdma, NooBaa and Ceph report failed or short transfers this way; the server may have
    // written part of the window (docs/protocols/rdma.md §5: quarantine the window).
    return Verdict(ReplyKind::kServerError, NextStep::kRetryOverHttp, EndpointSignal::kFailed, true,
                   Http(s) + ": RDMA transfer failed on the server");
  }
  return Verdict(ReplyKind::kObjectError, NextStep::kFail, EndpointSignal::kNone, false,
                 Http(s) + (in.s3_error_code.empty() ? "" : " " + std::string(in.s3_error_code)) +
                     ": not an RDMA matter");
}

ReplyVerdict ClassifyRdmaSuccess(const ReplyInput& in) {
  if (in.body_length != 0) {
    return Violation("success reply with a " + std::to_string(in.body_length) + "-byte body");
  }
  Result<std::optional<uint64_t>> reported = ReportedBytes(in);
  if (!reported.ok()) return Violation(std::string(reported.status().message()));
  uint64_t bytes = in.expected_bytes;
  if (reported->has_value()) {
    bytes = **reported;
  } else if (in.op == RdmaOp::kGet) {
    // Without the count we cannot tell a full window from a short transfer.
    return Violation("GET success reply without x-amz-rdma-bytes-transferred");
  }
  if (bytes != in.expected_bytes) {
    return Violation("server moved " + std::to_string(bytes) + " bytes, asked for " +
                     std::to_string(in.expected_bytes));
  }
  ReplyVerdict v = Verdict(ReplyKind::kRdmaDone, NextStep::kDone, EndpointSignal::kConfirmed, false,
                           "RDMA transfer completed");
  v.bytes_transferred = bytes;
  return v;
}

ReplyVerdict ClassifyNoReplyHeader(const ReplyInput& in) {
  if (in.op == RdmaOp::kGet) {
    if (in.body_length > 0) {
      // Ceph with RDMA off, any server without RDMA, or NooBaa's inline small objects. The
      // window was never touched.
      const bool small = in.body_length < kInlineSmallObjectLimit;
      return Verdict(ReplyKind::kIgnoredWithBody, NextStep::kUseBody,
                     small ? EndpointSignal::kNone : EndpointSignal::kTokenIgnored, false,
                     small ? "small object served inline in the body"
                           : "server ignored the token and sent the data in the body");
    }
    return Verdict(ReplyKind::kIgnoredNoData, NextStep::kRetryOverHttp, EndpointSignal::kFailed,
                   true, "no reply header and an empty body: nothing usable arrived");
  }
  if (in.etag.empty()) return Violation("PUT without x-amz-rdma-reply and without an ETag");
  if (in.expected_bytes > 0 && EqualsIgnoreCase(in.etag, kEmptyObjectEtag)) {
    return Verdict(ReplyKind::kIgnoredNoData, NextStep::kRetryOverHttp,
                   EndpointSignal::kTokenIgnored, false,
                   "server ignored the token and stored a 0-byte object; the HTTP retry "
                   "overwrites it");
  }
  Result<std::optional<uint64_t>> reported = ReportedBytes(in);
  if (!reported.ok()) return Violation(std::string(reported.status().message()));
  if (reported->has_value() && **reported != in.expected_bytes) {
    return Violation("server moved " + std::to_string(**reported) + " bytes, asked for " +
                     std::to_string(in.expected_bytes));
  }
  // AIStor does not mark PUT success. Trusted only because EndpointPolicy never sends an RDMA
  // PUT to an endpoint that has not done an RDMA transfer before.
  ReplyVerdict v = Verdict(ReplyKind::kPutDoneUnmarked, NextStep::kDone, EndpointSignal::kNone,
                           false, "PUT stored (success not marked by the server)");
  v.bytes_transferred = in.expected_bytes;
  return v;
}

}  // namespace

std::string_view RdmaOpName(RdmaOp op) {
  switch (op) {
    case RdmaOp::kGet:
      return "GET";
    case RdmaOp::kPut:
      return "PUT";
    case RdmaOp::kUploadPart:
      return "UploadPart";
  }
  return "?";
}

std::string_view ReplyKindName(ReplyKind kind) {
  switch (kind) {
    case ReplyKind::kRdmaDone:
      return "rdma-done";
    case ReplyKind::kPutDoneUnmarked:
      return "put-done-unmarked";
    case ReplyKind::kDeclinedWithBody:
      return "declined-with-body";
    case ReplyKind::kDeclined:
      return "declined";
    case ReplyKind::kIgnoredWithBody:
      return "ignored-with-body";
    case ReplyKind::kIgnoredNoData:
      return "ignored-no-data";
    case ReplyKind::kTokenRejected:
      return "token-rejected";
    case ReplyKind::kRdmaUnsupported:
      return "rdma-unsupported";
    case ReplyKind::kServerBusy:
      return "server-busy";
    case ReplyKind::kServerError:
      return "server-error";
    case ReplyKind::kObjectError:
      return "object-error";
    case ReplyKind::kProtocolViolation:
      return "protocol-violation";
    case ReplyKind::kNoResponse:
      return "no-response";
    case ReplyKind::kCancelled:
      return "cancelled";
  }
  return "?";
}

void FillReplyHeaders(const HeaderList& headers, ReplyInput* input) {
  input->rdma_reply = FindHeader(headers, header::kReply);
  input->bytes_transferred = FindHeader(headers, header::kBytesTransferred);
  input->bytes_legacy = FindHeader(headers, header::kBytesLegacy);
}

ReplyVerdict ClassifyReply(const ReplyInput& in) {
  const bool success_status = in.http_status >= 200 && in.http_status < 300;
  // An archived object is refused before any RDMA (vgwrdma runs the glacier check first): the
  // tape path handles it, and it must not count against the endpoint whatever else is set.
  if (!success_status && in.s3_error_code == kS3InvalidObjectState) {
    return Verdict(ReplyKind::kObjectError, NextStep::kFail, EndpointSignal::kNone, false,
                   Http(in.http_status) + " InvalidObjectState: object is archived");
  }
  std::optional<RdmaReply> reply;
  if (in.rdma_reply) {
    Result<RdmaReply> parsed = ParseRdmaReply(*in.rdma_reply);
    if (!parsed.ok()) return Violation(std::string(parsed.status().message()));
    reply = *parsed;
  }
  if (reply && reply->kind == RdmaReply::Kind::kDeclined) {
    // The draft spec lets a GET that failed mid-transfer recover with 501 + body, so the window
    // may hold partial data: fenced either way (it happens once, then the endpoint is on HTTP).
    if (success_status && in.op == RdmaOp::kGet && in.body_length > 0 && in.s3_error_code.empty()) {
      return Verdict(ReplyKind::kDeclinedWithBody, NextStep::kUseBody, EndpointSignal::kDeclined,
                     true, "server declined RDMA and sent the object in the body");
    }
    return Verdict(ReplyKind::kDeclined, NextStep::kRetryOverHttp, EndpointSignal::kDeclined, true,
                   "server declined RDMA (x-amz-rdma-reply 501)");
  }
  if (reply && reply->kind == RdmaReply::Kind::kFailed) {
    return Verdict(ReplyKind::kServerError, NextStep::kRetryOverHttp, EndpointSignal::kFailed, true,
                   "server reports the RDMA transfer failed (" + Http(in.http_status) + ")");
  }
  if (!success_status) {
    if (reply) return Violation("success reply with " + Http(in.http_status));
    return ClassifyHttpError(in);
  }
  if (reply) return ClassifyRdmaSuccess(in);
  return ClassifyNoReplyHeader(in);
}

ReplyVerdict ClassifyNoResponse(bool cancelled) {
  if (cancelled) {
    return Verdict(ReplyKind::kCancelled, NextStep::kFail, EndpointSignal::kNone, true,
                   "request cancelled; the server may still write the window");
  }
  return Verdict(ReplyKind::kNoResponse, NextStep::kRetryOverHttp, EndpointSignal::kFailed, true,
                 "no response (timeout or connection lost); the server may still write the window");
}

}  // namespace reelfs::rdmaio::wire

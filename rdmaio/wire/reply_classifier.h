// ClassifyReply: what a server did with an RDMA-carrying S3 request, and what to do next.
//
// Servers disagree (docs/protocols/rdma.md §3 names who does what): AIStor declines with
// `x-amz-rdma-reply: 501` and an S3 error; the draft spec declines a GET with 501 and the object
// in the body; NooBaa answers HTTP 501 when RDMA is off, 400 for a bad token, 500 for I/O errors
// and serves objects under 4 KiB inline with no reply header; Ceph RGW ignores the token when
// RDMA is off, answers 503 when its buffers are busy and 500 for short transfers; vgwrdma has no
// decline at all (500 for any RDMA problem, 501 NotImplemented for UploadPart); a hipobj-rc
// server answers 501 + `x-amz-rdma-protocol-status: unsupported`, 413 and 503 SlowDown. This
// classifier folds all of them into one small table (docs/protocols/rdma.md) so the transport,
// the endpoint policy and the window fence each read one field.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdmaio/wire/rdma_headers.h"

namespace reelfs::rdmaio::wire {

// Operations tracked separately: vgwrdma does RDMA GET and PUT but refuses RDMA UploadPart.
enum class RdmaOp : uint8_t { kGet, kPut, kUploadPart };
std::string_view RdmaOpName(RdmaOp op);

// The response, as the HTTP layer saw it. Header values are raw (absent = header missing); the
// classifier parses them, so a malformed value becomes kProtocolViolation, never a crash.
struct ReplyInput {
  RdmaOp op = RdmaOp::kGet;
  int http_status = 0;
  std::optional<std::string_view> rdma_reply;         // x-amz-rdma-reply
  std::optional<std::string_view> bytes_transferred;  // x-amz-rdma-bytes-transferred
  std::optional<std::string_view> bytes_legacy;       // x-amz-rdma-bytes
  uint64_t body_length = 0;                           // bytes in the response body
  std::string_view s3_error_code;  // <Code> when the body is an S3 error document, else empty
  std::string_view etag;           // ETag response header, quotes stripped (PUT, UploadPart)
  uint64_t expected_bytes = 0;     // GET: range length asked for; PUT: payload size
};

// Fills the header fields of `input` from a response's headers (views into `headers`).
void FillReplyHeaders(const HeaderList& headers, ReplyInput* input);

enum class ReplyKind : uint8_t {
  kRdmaDone,           // 2xx, reply 200/204/206 (or ok, 200:<token>), empty body, byte count right
  kPutDoneUnmarked,    // PUT/UploadPart 2xx with an ETag and no reply header (AIStor's success)
  kDeclinedWithBody,   // GET, reply 501, the object in the body (draft spec decline)
  kDeclined,           // reply 501 with no usable body (AIStor; PUT RDMANotSupported; hipobj RC)
  kIgnoredWithBody,    // GET, 2xx, no reply header, data in the body (Ceph off; NooBaa inline)
  kIgnoredNoData,      // 2xx, no reply header, nothing moved: GET empty body, PUT 0-byte object
  kTokenRejected,      // HTTP 400 (InvalidRDMAToken, S3InvalidRdmaToken, Ceph, vgwrdma)
  kRdmaUnsupported,    // HTTP 501 (NooBaa S3RdmaNotSupported, vgwrdma NotImplemented, hipobj)
  kServerBusy,         // HTTP 503 (Ceph buffers, SlowDown) or 413 (over the server's limit)
  kServerError,        // HTTP 500/other 5xx, or reply "err"/other failure code
  kObjectError,        // any other non-2xx (403 InvalidObjectState, 404, 412, ...): not RDMA's
  kProtocolViolation,  // contradictory or malformed reply
  kNoResponse,         // timeout or connection lost before a response (ClassifyNoResponse)
  kCancelled,          // we abandoned the request (ClassifyNoResponse)
};
std::string_view ReplyKindName(ReplyKind kind);

// What the caller does with this request.
enum class NextStep : uint8_t {
  kDone,           // the bytes are in the window (or the PUT is stored)
  kUseBody,        // the bytes are in the HTTP body: copy them to the destination
  kRetryOverHttp,  // send the same request again without the token
  kFail,           // report the error (it is about the object or the caller, not RDMA)
};

// What the reply says about RDMA to this endpoint for this operation (EndpointPolicy input).
enum class EndpointSignal : uint8_t {
  kNone,          // says nothing either way
  kConfirmed,     // the server did the RDMA transfer
  kFailed,        // RDMA was attempted and failed; repeated failures decline the endpoint
  kDeclined,      // the server will not do RDMA for this operation: use HTTP
  kTokenIgnored,  // the server does not speak the protocol at all: use HTTP, never RDMA PUT
};

struct ReplyVerdict {
  ReplyKind kind = ReplyKind::kProtocolViolation;
  NextStep next = NextStep::kRetryOverHttp;
  EndpointSignal endpoint = EndpointSignal::kNone;
  // The server may have written (or may still write) into the window: fence it (fencing rule,
  // window_fence.h) before anything, the HTTP body included, is written there again.
  bool fence_window = true;
  uint64_t bytes_transferred = 0;  // kRdmaDone: bytes now in the window
  std::string reason;              // one line for the log

  // The "fall back to HTTP for this endpoint and operation" decision.
  bool FallBackForEndpoint() const {
    return endpoint == EndpointSignal::kDeclined || endpoint == EndpointSignal::kTokenIgnored;
  }
};

// A response arrived.
ReplyVerdict ClassifyReply(const ReplyInput& input);

// No response: `cancelled` if we gave up on purpose, otherwise a timeout or a broken connection.
ReplyVerdict ClassifyNoResponse(bool cancelled);

// Objects below this size may be served inline by NooBaa (cached first range) even when RDMA
// works, so a small body without a reply header says nothing about the endpoint.
inline constexpr uint64_t kInlineSmallObjectLimit = 4096;

// The ETag of an empty object (MD5 of zero bytes): a PUT that got it back for a non-empty payload
// was stored as a 0-byte object by a server that ignored the token (docs/protocols/rdma.md §4).
inline constexpr std::string_view kEmptyObjectEtag = "d41d8cd98f00b204e9800998ecf8427e";

}  // namespace reelfs::rdmaio::wire

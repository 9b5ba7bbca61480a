// One row per server behaviour of the table in docs/protocols/rdma.md §3 (its "Seen from" column
// names the server).
#include "rdmaio/wire/reply_classifier.h"

#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::rdmaio::wire {
namespace {

constexpr uint64_t k8MiB = 8 << 20;

using K = ReplyKind;
using N = NextStep;
using E = EndpointSignal;

struct Row {
  const char* behaviour;
  ReplyInput in;
  ReplyKind kind;
  NextStep next;
  EndpointSignal endpoint;
  bool fence;
};

ReplyInput Get(int http, std::optional<std::string_view> reply,
               std::optional<std::string_view> bytes = std::nullopt, uint64_t body = 0,
               std::string_view s3_code = "") {
  return ReplyInput{.op = RdmaOp::kGet,
                    .http_status = http,
                    .rdma_reply = reply,
                    .bytes_transferred = bytes,
                    .body_length = body,
                    .s3_error_code = s3_code,
                    .expected_bytes = k8MiB};
}

ReplyInput Put(int http, std::optional<std::string_view> reply, std::string_view etag = "",
               std::string_view s3_code = "", RdmaOp op = RdmaOp::kPut) {
  return ReplyInput{.op = op,
                    .http_status = http,
                    .rdma_reply = reply,
                    .s3_error_code = s3_code,
                    .etag = etag,
                    .expected_bytes = k8MiB};
}

ReplyInput WithLegacyBytes(ReplyInput in, std::string_view bytes) {
  in.bytes_legacy = bytes;
  return in;
}

ReplyInput WithBytes(ReplyInput in, std::string_view bytes) {
  in.bytes_transferred = bytes;
  return in;
}

ReplyInput WithExpected(ReplyInput in, uint64_t expected) {
  in.expected_bytes = expected;
  return in;
}

const std::vector<Row>& Table() {
  static const std::vector<Row> rows = {
      // --- RDMA did the transfer: 200/204/206 are equivalent, HTTP 200-vs-206 ignored.
      {"vgwrdma ranged GET: HTTP 206, reply always 200", Get(206, "200", "8388608"), K::kRdmaDone,
       N::kDone, E::kConfirmed, false},
      {"Ceph RGW ranged GET: HTTP 206, reply 200", Get(206, "200", "8388608"), K::kRdmaDone,
       N::kDone, E::kConfirmed, false},
      {"AIStor ranged GET: reply 206", Get(206, "206", "8388608"), K::kRdmaDone, N::kDone,
       E::kConfirmed, false},
      {"NooBaa GET: reply copies status, HTTP 200 with reply 206 still fine",
       Get(200, "206", "8388608"), K::kRdmaDone, N::kDone, E::kConfirmed, false},
      {"NooBaa before 2026-03: legacy x-amz-rdma-bytes",
       WithLegacyBytes(Get(206, "206"), "8388608"), K::kRdmaDone, N::kDone, E::kConfirmed, false},
      {"aws-c-s3 form N/M", Get(206, "200", "8388608/1073741824"), K::kRdmaDone, N::kDone,
       E::kConfirmed, false},
      {"reply 204", Get(200, "204", "8388608"), K::kRdmaDone, N::kDone, E::kConfirmed, false},
      {"hipObject legacy 'ok'", Get(200, "ok", "8388608"), K::kRdmaDone, N::kDone, E::kConfirmed,
       false},
      {"vgwrdma / NooBaa / Ceph PUT: reply 200, no byte count", Put(200, "200", "etag1"),
       K::kRdmaDone, N::kDone, E::kConfirmed, false},
      {"PUT reply 200 with a matching byte count", WithBytes(Put(200, "200", "e"), "8388608"),
       K::kRdmaDone, N::kDone, E::kConfirmed, false},
      {"AIStor PUT success: HTTP 200 + ETag, no reply header", Put(200, std::nullopt, "etag1"),
       K::kPutDoneUnmarked, N::kDone, E::kNone, false},
      {"AIStor UploadPart success, unmarked",
       Put(200, std::nullopt, "etag2", "", RdmaOp::kUploadPart), K::kPutDoneUnmarked, N::kDone,
       E::kNone, false},

      // --- Declines via x-amz-rdma-reply: 501.
      {"draft spec GET decline: 501 and the object in the body",
       Get(200, "501", std::nullopt, k8MiB), K::kDeclinedWithBody, N::kUseBody, E::kDeclined, true},
      {"AIStor fabric not configured: reply 501 with an S3 error (HTTP 200)",
       Get(200, "501", std::nullopt, 300, "NotImplemented"), K::kDeclined, N::kRetryOverHttp,
       E::kDeclined, true},
      {"AIStor decline with an error status", Get(501, "501", std::nullopt, 300, "NotImplemented"),
       K::kDeclined, N::kRetryOverHttp, E::kDeclined, true},
      {"draft spec PUT decline: HTTP 200 + 501 + RDMANotSupported",
       Put(200, "501", "", "RDMANotSupported"), K::kDeclined, N::kRetryOverHttp, E::kDeclined,
       true},
      {"elbencho --no-rdma: reply 501", Get(200, "501"), K::kDeclined, N::kRetryOverHttp,
       E::kDeclined, true},
      {"elbencho, hipObject RC-v1 token: reply 501 + protocol-status unsupported", Get(200, "501"),
       K::kDeclined, N::kRetryOverHttp, E::kDeclined, true},

      // --- The token was ignored (no reply header).
      {"Ceph RDMA disabled: ordinary HTTP path, data in the body",
       Get(206, std::nullopt, std::nullopt, k8MiB), K::kIgnoredWithBody, N::kUseBody,
       E::kTokenIgnored, false},
      {"plain S3 server (no RDMA support) ignores the token",
       Get(200, std::nullopt, std::nullopt, k8MiB), K::kIgnoredWithBody, N::kUseBody,
       E::kTokenIgnored, false},
      {"NooBaa object < 4 KiB served inline from cache",
       WithExpected(Get(200, std::nullopt, std::nullopt, 1000), 1000), K::kIgnoredWithBody,
       N::kUseBody, E::kNone, false},
      {"GET: 2xx, no reply header, empty body", Get(200, std::nullopt), K::kIgnoredNoData,
       N::kRetryOverHttp, E::kFailed, true},
      {"server ignoring a PUT token stored a 0-byte object",
       Put(200, std::nullopt, "d41d8cd98f00b204e9800998ecf8427e"), K::kIgnoredNoData,
       N::kRetryOverHttp, E::kTokenIgnored, false},

      // --- HTTP status errors.
      {"NooBaa RDMA disabled: HTTP 501 S3RdmaNotSupported, no reply header",
       Get(501, std::nullopt, std::nullopt, 200, "S3RdmaNotSupported"), K::kRdmaUnsupported,
       N::kRetryOverHttp, E::kDeclined, false},
      {"vgwrdma UploadPart with a token: HTTP 501 NotImplemented",
       Put(501, std::nullopt, "", "NotImplemented", RdmaOp::kUploadPart), K::kRdmaUnsupported,
       N::kRetryOverHttp, E::kDeclined, false},
      {"hipobj-rc server, unsupported: HTTP 501 + protocol-status unsupported",
       Get(501, std::nullopt), K::kRdmaUnsupported, N::kRetryOverHttp, E::kDeclined, false},
      {"NooBaa token validation: HTTP 400 S3InvalidRdmaToken",
       Get(400, std::nullopt, std::nullopt, 200, "S3InvalidRdmaToken"), K::kTokenRejected,
       N::kRetryOverHttp, E::kDeclined, false},
      {"draft spec invalid token: HTTP 400 InvalidRDMAToken",
       Get(400, std::nullopt, std::nullopt, 200, "InvalidRDMAToken"), K::kTokenRejected,
       N::kRetryOverHttp, E::kDeclined, false},
      {"Ceph malformed addr/size: HTTP 400 InvalidArgument",
       Get(400, std::nullopt, std::nullopt, 200, "InvalidArgument"), K::kTokenRejected,
       N::kRetryOverHttp, E::kDeclined, false},
      {"vgwrdma token field 0 unparsable: HTTP 400", Get(400, std::nullopt), K::kTokenRejected,
       N::kRetryOverHttp, E::kDeclined, false},
      {"NooBaa RDMA I/O error: HTTP 500 S3RdmaIoError",
       Get(500, std::nullopt, std::nullopt, 200, "S3RdmaIoError"), K::kServerError,
       N::kRetryOverHttp, E::kFailed, true},
      {"vgwrdma RDMA problem or range > 1 GiB / > token size: HTTP 500",
       Get(500, std::nullopt, std::nullopt, 200, "InternalError"), K::kServerError,
       N::kRetryOverHttp, E::kFailed, true},
      {"Ceph short transfer: HTTP 500", Get(500, std::nullopt), K::kServerError, N::kRetryOverHttp,
       E::kFailed, true},
      {"draft spec PUT RDMATransferFailed: HTTP 500",
       Put(500, std::nullopt, "", "RDMATransferFailed"), K::kServerError, N::kRetryOverHttp,
       E::kFailed, true},
      {"HTTP 502 from a proxy", Get(502, std::nullopt), K::kServerError, N::kRetryOverHttp,
       E::kFailed, true},
      {"Ceph buffers busy or transfer > buffer: HTTP 503",
       Get(503, std::nullopt, std::nullopt, 200, "ServiceUnavailable"), K::kServerBusy,
       N::kRetryOverHttp, E::kNone, false},
      {"hipobj-rc limits: HTTP 503 SlowDown", Get(503, std::nullopt, std::nullopt, 200, "SlowDown"),
       K::kServerBusy, N::kRetryOverHttp, E::kNone, false},
      {"hipobj-rc over-size: HTTP 413", Get(413, std::nullopt), K::kServerBusy, N::kRetryOverHttp,
       E::kNone, false},
      {"ScoutFS glacier mode: HTTP 403 InvalidObjectState before any RDMA",
       Get(403, std::nullopt, std::nullopt, 250, "InvalidObjectState"), K::kObjectError, N::kFail,
       E::kNone, false},
      {"InvalidObjectState wins even next to a 501 reply",
       Get(403, "501", std::nullopt, 250, "InvalidObjectState"), K::kObjectError, N::kFail,
       E::kNone, false},
      {"HTTP 404 NoSuchKey", Get(404, std::nullopt, std::nullopt, 200, "NoSuchKey"),
       K::kObjectError, N::kFail, E::kNone, false},
      {"HTTP 412 If-Match failed", Get(412, std::nullopt, std::nullopt, 200, "PreconditionFailed"),
       K::kObjectError, N::kFail, E::kNone, false},
      {"HTTP 403 AccessDenied", Get(403, std::nullopt, std::nullopt, 200, "AccessDenied"),
       K::kObjectError, N::kFail, E::kNone, false},

      // --- Failure replies and protocol violations: fence, retry over HTTP, count a failure.
      {"hipObject legacy 'err'", Get(200, "err"), K::kServerError, N::kRetryOverHttp, E::kFailed,
       true},
      {"reply 500 inside HTTP 200", Get(200, "500"), K::kServerError, N::kRetryOverHttp, E::kFailed,
       true},
      {"success reply with a non-empty body", Get(206, "200", "8388608", k8MiB),
       K::kProtocolViolation, N::kRetryOverHttp, E::kFailed, true},
      {"short transfer reported as success", Get(206, "200", "4194304"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"more bytes than asked", Get(206, "200", "8388609"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"GET success without a byte count", Get(206, "200"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"success reply on HTTP 500", Get(500, "200", "8388608"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"garbage reply header", Get(200, "yes please", "8388608"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"truncated reply header", Get(200, "20", "8388608"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"reply 200 with a truncated server token", Get(200, "200:0100", "8388608"),
       K::kProtocolViolation, N::kRetryOverHttp, E::kFailed, true},
      {"garbage byte count", Get(206, "200", "lots"), K::kProtocolViolation, N::kRetryOverHttp,
       E::kFailed, true},
      {"byte count beyond 2^64", Get(206, "200", "99999999999999999999999"), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"PUT: no reply header and no ETag", Put(200, std::nullopt), K::kProtocolViolation,
       N::kRetryOverHttp, E::kFailed, true},
      {"PUT unmarked but short", WithBytes(Put(200, std::nullopt, "e"), "17"),
       K::kProtocolViolation, N::kRetryOverHttp, E::kFailed, true},
  };
  return rows;
}

TEST_SUITE("rdmaio") {
  TEST_CASE("reply classifier: every server behaviour of the reference") {
    for (const Row& row : Table()) {
      CAPTURE(row.behaviour);
      const ReplyVerdict v = ClassifyReply(row.in);
      CAPTURE(v.reason);
      CHECK(ReplyKindName(v.kind) == ReplyKindName(row.kind));
      CHECK(static_cast<int>(v.next) == static_cast<int>(row.next));
      CHECK(static_cast<int>(v.endpoint) == static_cast<int>(row.endpoint));
      CHECK(v.fence_window == row.fence);
      CHECK_FALSE(v.reason.empty());
      if (v.kind == ReplyKind::kRdmaDone) CHECK(v.bytes_transferred == row.in.expected_bytes);
      // The endpoint falls back exactly when the server said it will not do RDMA.
      CHECK(v.FallBackForEndpoint() ==
            (row.endpoint == E::kDeclined || row.endpoint == E::kTokenIgnored));
    }
  }

  TEST_CASE("reply classifier: hipObject 200:<server token> completes") {
    RcToken server;
    server.qpn = 5;
    server.length = 1;
    const std::string reply = "200:" + EncodeRcToken(server).value();
    const ReplyVerdict v = ClassifyReply(Get(200, reply, "8388608"));
    CHECK(v.kind == ReplyKind::kRdmaDone);
  }

  TEST_CASE("reply classifier: headers read from a response") {
    HeaderList h = {{"x-amz-rdma-reply", "206"},
                    {"X-Amz-Rdma-Bytes-Transferred", "8388608"},
                    {"content-length", "0"}};
    ReplyInput in = Get(206, std::nullopt);
    FillReplyHeaders(h, &in);
    CHECK(in.rdma_reply == "206");
    CHECK(in.bytes_transferred == "8388608");
    CHECK_FALSE(in.bytes_legacy.has_value());
    CHECK(ClassifyReply(in).kind == ReplyKind::kRdmaDone);
  }

  TEST_CASE("reply classifier: no response") {
    const ReplyVerdict timeout = ClassifyNoResponse(false);
    CHECK(timeout.kind == ReplyKind::kNoResponse);
    CHECK(timeout.next == NextStep::kRetryOverHttp);
    CHECK(timeout.endpoint == EndpointSignal::kFailed);
    CHECK(timeout.fence_window);
    const ReplyVerdict cancelled = ClassifyNoResponse(true);
    CHECK(cancelled.kind == ReplyKind::kCancelled);
    CHECK(cancelled.next == NextStep::kFail);
    CHECK(cancelled.endpoint == EndpointSignal::kNone);
    CHECK(cancelled.fence_window);
  }

  TEST_CASE("reply classifier: hostile input never crashes") {
    const std::string huge(1 << 20, '9');
    const std::string binary("\0\x01\xff:200", 6);
    for (int http : {-1, 0, 99, 100, 200, 299, 300, 418, 599, 600, 100000}) {
      for (std::optional<std::string_view> reply :
           {std::optional<std::string_view>(), std::optional<std::string_view>(""),
            std::optional<std::string_view>(huge), std::optional<std::string_view>(binary),
            std::optional<std::string_view>("200:"), std::optional<std::string_view>("501")}) {
        for (RdmaOp op : {RdmaOp::kGet, RdmaOp::kPut, RdmaOp::kUploadPart}) {
          ReplyInput in{.op = op,
                        .http_status = http,
                        .rdma_reply = reply,
                        .bytes_transferred = huge,
                        .bytes_legacy = binary,
                        .body_length = UINT64_MAX,
                        .s3_error_code = binary,
                        .etag = huge,
                        .expected_bytes = UINT64_MAX};
          const ReplyVerdict v = ClassifyReply(in);
          CHECK_FALSE(v.reason.empty());
          // Nothing malformed may ever be taken as a completed RDMA transfer.
          CHECK(v.kind != ReplyKind::kRdmaDone);
        }
      }
    }
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire

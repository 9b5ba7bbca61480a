// The x-amz-rdma-* HTTP headers shared by every flavour of S3 over RDMA: their names, the DC v1
// data request (a ranged GET or a PUT carrying `x-amz-rdma-token`), and the response headers a
// server uses to say what it did (`x-amz-rdma-reply`, `x-amz-rdma-bytes-transferred`).
// The hipobj-rc-v2 control requests are in rc_control.h; what a reply *means* is decided in
// reply_classifier.h. The table: docs/protocols/rdma.md §1.
//
// Every x-amz-rdma-* header a client sends must be in the SigV4 SignedHeaders; that is the
// signer's job (s3/protocol), these codecs only produce and check values.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "rdmaio/wire/dc_token.h"
#include "rdmaio/wire/rc_token.h"

namespace reelfs::rdmaio::wire {

// HTTP headers as s3/client keeps them: (lowercase name, value), in arrival order.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// First header called `name` (ASCII case-insensitive), or nullopt.
std::optional<std::string_view> FindHeader(const HeaderList& headers, std::string_view name);
// Like FindHeader, but a header that appears twice is kInvalidArgument: a control value must
// never be ambiguous (two tokens, two cookies).
Result<std::optional<std::string_view>> FindSingleHeader(const HeaderList& headers,
                                                         std::string_view name);

namespace header {
inline constexpr std::string_view kToken = "x-amz-rdma-token";
inline constexpr std::string_view kReply = "x-amz-rdma-reply";
inline constexpr std::string_view kBytesTransferred = "x-amz-rdma-bytes-transferred";
// Older name of the byte count (aws-c-s3 cuObject plugin default; NooBaa before 2026-03). Read
// both, prefer kBytesTransferred.
inline constexpr std::string_view kBytesLegacy = "x-amz-rdma-bytes";
inline constexpr std::string_view kProtocolStatus = "x-amz-rdma-protocol-status";
inline constexpr std::string_view kContentSha256 = "x-amz-content-sha256";
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
}  // namespace header

// Headers an RDMA PUT/UploadPart must not carry: the body is empty, so anything describing an
// encoded body would be a lie (docs/protocols/rdma.md §1). A user `Content-Encoding` such as gzip
// stays; `Content-Encoding: aws-chunked` must go (value-dependent, so the caller checks it).
inline constexpr std::array<std::string_view, 3> kHeadersNotSentWithRdmaPut = {
    "content-md5", "transfer-encoding", "x-amz-decoded-content-length"};

// Headers to add to a GET or PUT so it becomes a DC v1 RDMA request: the token and
// `x-amz-content-sha256: UNSIGNED-PAYLOAD` (AIStor skips payload hashing only for exactly that).
// Deliberately absent: the legacy ":addr:size" token suffix and `x-amz-rdma-agent`
// (docs/protocols/rdma.md §1).
Result<HeaderList> DcDataRequestHeaders(const DcToken& token);

// Server side: the DC token of a request, nullopt if it carries none (a plain S3 request).
// kInvalidArgument for a malformed or duplicated token (servers answer 400).
Result<std::optional<DcToken>> DecodeDcDataRequest(const HeaderList& headers);

// A parsed `x-amz-rdma-reply` value.
struct RdmaReply {
  enum class Kind : uint8_t {
    kSuccess,   // "200", "204", "206", legacy "ok", or "200:<rc token>": the RDMA transfer happened
    kDeclined,  // "501": the server did not use RDMA for this request
    kFailed,    // legacy "err" or any other non-2xx code: RDMA was attempted and failed
  };
  Kind kind = Kind::kSuccess;
  int code = 0;                         // the decimal code; 0 for the legacy words
  std::optional<RcToken> server_token;  // "200:<88 hex>" (hipObject RC, PREPARE reply)
};

// Accepts a three-digit code (surrounding whitespace allowed), "ok"/"err" (any case) and
// "200:<88 hex>". kInvalidArgument for anything else, including 2xx codes other than
// 200/204/206, which no server sends and we cannot interpret.
Result<RdmaReply> ParseRdmaReply(std::string_view value);

// "N" or "N/M" (aws-c-s3 accepts both and uses N): the bytes the server moved.
Result<uint64_t> ParseBytesTransferred(std::string_view value);

// The byte count of a response: kBytesTransferred if present, else kBytesLegacy, else nullopt.
// kInvalidArgument if the chosen header is malformed or duplicated.
Result<std::optional<uint64_t>> FindBytesTransferred(const HeaderList& headers);

}  // namespace reelfs::rdmaio::wire

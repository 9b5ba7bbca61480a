// hipobj-rc-v2: the two-phase control protocol that sets up an RC transfer for one S3 request
// (docs/protocols/rdma.md §2.3; §1 has the full header table).
//
//   POST /.hipobj-rc/prepare  client token (88 hex), psn, cookie, op, target, size, offset
//     <- x-amz-rdma-reply: 200:<server token>, session, psn, qpn, mr-addr, mr-rkey
//   (client connects its QP to the server's)
//   POST /.hipobj-rc/ready    session, cookie, client qpn, mr-addr, mr-rkey: runs the transfer
//     <- bytes-transferred, cookie echo, x-amz-rdma-etag, x-amz-rdma-version-id [, checksum]
//   POST /.hipobj-rc/cancel   abandons a prepared session
//
// The last RDMA write carries the cookie as immediate data; RC delivers in order, so its
// completion means the whole transfer has landed. Every x-amz-rdma-* header is signed.
//
// Formats the reference fixes: token 88 hex, psn hex (24 bits), cookie hex (non-zero), op
// GET|PUT, size and offset decimal. Formats it leaves open, chosen here and marked in the doc:
// qpn, mr-addr and mr-rkey hex (like psn and cookie); session an opaque printable string; the
// CANCEL headers (session + cookie, the pair that names a prepared transfer). Decoders accept an
// optional "0x" on hex values.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "rdmaio/wire/rc_token.h"
#include "rdmaio/wire/rdma_headers.h"

namespace reelfs::rdmaio::wire {

inline constexpr std::string_view kRcProtocolName = "hipobj-rc-v2";
inline constexpr std::string_view kRcPreparePath = "/.hipobj-rc/prepare";
inline constexpr std::string_view kRcReadyPath = "/.hipobj-rc/ready";
inline constexpr std::string_view kRcCancelPath = "/.hipobj-rc/cancel";
// Packet sequence numbers are 24-bit in InfiniBand.
inline constexpr uint32_t kMaxPsn = 0xffffff;
// Bounds on the free-form values so a hostile peer cannot make us keep megabytes per request:
// a session id is an opaque handle, a target is bucket + URI-encoded key (S3 keys are at most
// 1024 bytes, three characters per encoded byte) plus the multipart query.
inline constexpr size_t kMaxSessionLength = 256;
inline constexpr size_t kMaxTargetLength = 4096;

namespace header {
inline constexpr std::string_view kProtocol = "x-amz-rdma-protocol";
inline constexpr std::string_view kPsn = "x-amz-rdma-psn";
inline constexpr std::string_view kCookie = "x-amz-rdma-cookie";
inline constexpr std::string_view kOp = "x-amz-rdma-op";
inline constexpr std::string_view kTarget = "x-amz-rdma-target";
inline constexpr std::string_view kSize = "x-amz-rdma-size";
inline constexpr std::string_view kOffset = "x-amz-rdma-offset";
inline constexpr std::string_view kSession = "x-amz-rdma-session";
inline constexpr std::string_view kQpn = "x-amz-rdma-qpn";
inline constexpr std::string_view kMrAddr = "x-amz-rdma-mr-addr";
inline constexpr std::string_view kMrRkey = "x-amz-rdma-mr-rkey";
inline constexpr std::string_view kEtag = "x-amz-rdma-etag";
inline constexpr std::string_view kVersionId = "x-amz-rdma-version-id";
inline constexpr std::string_view kChecksum = "x-amz-rdma-checksum";  // crc64nvme (Ceph fork)
}  // namespace header

enum class RcOp : uint8_t { kGet, kPut };

struct RcPrepareRequest {
  RcToken token;        // the client's QP and window; transport must be kRc
  uint32_t psn = 0;     // the client's initial packet sequence number, 24 bits
  uint64_t cookie = 0;  // non-zero; echoed by READY and sent as the last write's immediate
  RcOp op = RcOp::kGet;
  std::string target;   // "/bucket/key" or "/bucket/key?partNumber=N&uploadId=U", URI-encoded
  uint64_t size = 0;    // bytes to move, 1..token.length
  uint64_t offset = 0;  // object offset (a ranged GET)
};

struct RcPrepareReply {
  RcToken server_token;  // the server's QP (transport kRc)
  std::string session;   // opaque, names the prepared transfer in READY / CANCEL
  uint32_t psn = 0;      // the server's initial packet sequence number
  uint32_t qpn = 0;
  uint64_t mr_addr = 0;
  uint32_t mr_rkey = 0;
};

struct RcReadyRequest {
  std::string session;
  uint64_t cookie = 0;
  uint32_t qpn = 0;  // the client's
  uint64_t mr_addr = 0;
  uint32_t mr_rkey = 0;
};

struct RcReadyReply {
  uint64_t bytes_transferred = 0;
  uint64_t cookie = 0;     // must echo the request's
  std::string etag;        // of the object read or written
  std::string version_id;  // empty if unversioned or not sent
  std::string checksum;    // empty unless the server sends one (Ceph fork: crc64nvme)
};

struct RcCancelRequest {
  std::string session;
  uint64_t cookie = 0;
};

// Encoders check what they emit (kInvalidArgument for out-of-range psn/qpn, zero cookie, a size
// outside the token window, an unprintable or overlong session/target); decoders check the same
// and also reject missing, duplicated or malformed headers, and a protocol other than
// kRcProtocolName.
Result<HeaderList> EncodeRcPrepare(const RcPrepareRequest& request);
Result<RcPrepareRequest> DecodeRcPrepare(const HeaderList& headers);

Result<HeaderList> EncodeRcPrepareReply(const RcPrepareReply& reply);
Result<RcPrepareReply> DecodeRcPrepareReply(const HeaderList& headers);

Result<HeaderList> EncodeRcReady(const RcReadyRequest& request);
Result<RcReadyRequest> DecodeRcReady(const HeaderList& headers);

Result<HeaderList> EncodeRcReadyReply(const RcReadyReply& reply);
Result<RcReadyReply> DecodeRcReadyReply(const HeaderList& headers);

Result<HeaderList> EncodeRcCancel(const RcCancelRequest& request);
Result<RcCancelRequest> DecodeRcCancel(const HeaderList& headers);

// A READY reply finishes the transfer only if it echoes our cookie and moved exactly the bytes
// asked for; kDataLoss otherwise (the window holds something, but not what we asked for).
Status CheckRcReadyReply(const RcReadyReply& reply, uint64_t cookie, uint64_t expected_bytes);

}  // namespace reelfs::rdmaio::wire

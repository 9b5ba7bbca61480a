#include "rdmaio/wire/rc_control.h"

#include <string>

#include "common/strings.h"
#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire {
namespace {

using internal::ParseDecimalHeader;
using internal::ParseHexHeader;

std::string Hex(uint64_t value, int digits) {
  std::string out;
  internal::AppendHex(&out, value, digits);
  return out;
}

Result<std::string_view> Require(const HeaderList& headers, std::string_view name) {
  REELFS_ASSIGN_OR_RETURN(std::optional<std::string_view> value, FindSingleHeader(headers, name));
  if (!value) return Status::InvalidArgument(std::string(name) + ": missing");
  return Trim(*value);
}

// Visible ASCII only: these values travel in headers and end up in logs.
Status CheckPrintable(std::string_view value, std::string_view field, size_t max_length) {
  if (value.empty()) return Status::InvalidArgument(std::string(field) + ": empty");
  if (value.size() > max_length) return Status::InvalidArgument(std::string(field) + ": too long");
  for (char c : value) {
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument(std::string(field) + ": non-printable character");
    }
  }
  return Status::Ok();
}

Status CheckTarget(std::string_view target) {
  REELFS_RETURN_IF_ERROR(CheckPrintable(target, header::kTarget, kMaxTargetLength));
  if (target.size() < 2 || target[0] != '/' || target[1] == '/' || target[1] == '?') {
    return Status::InvalidArgument("x-amz-rdma-target: expected /bucket/key");
  }
  return Status::Ok();
}

Status CheckRcTransport(const RcToken& token, std::string_view what) {
  if (token.transport != RcTransport::kRc) {
    return Status::InvalidArgument(std::string(what) + ": token transport is not RC");
  }
  return Status::Ok();
}

Status CheckPrepare(const RcPrepareRequest& r) {
  REELFS_RETURN_IF_ERROR(CheckRcTransport(r.token, "prepare"));
  if (r.psn > kMaxPsn) return Status::InvalidArgument("x-amz-rdma-psn: wider than 24 bits");
  if (r.cookie == 0) return Status::InvalidArgument("x-amz-rdma-cookie: must be non-zero");
  if (r.size == 0) return Status::InvalidArgument("x-amz-rdma-size: must be non-zero");
  // The server moves `size` bytes into or out of the client window; more would overrun it.
  if (r.size > r.token.length) {
    return Status::InvalidArgument("x-amz-rdma-size: larger than the token's window");
  }
  if (r.offset > UINT64_MAX - (r.size - 1)) {
    return Status::InvalidArgument("x-amz-rdma-offset: offset + size wraps");
  }
  return CheckTarget(r.target);
}

Result<uint32_t> ParseQpn(std::string_view text) {
  REELFS_ASSIGN_OR_RETURN(uint64_t qpn, ParseHexHeader(text, header::kQpn, kMaxQpn));
  return static_cast<uint32_t>(qpn);
}

Result<uint64_t> ParseCookie(std::string_view text) {
  REELFS_ASSIGN_OR_RETURN(uint64_t cookie, ParseHexHeader(text, header::kCookie, UINT64_MAX));
  if (cookie == 0) return Status::InvalidArgument("x-amz-rdma-cookie: must be non-zero");
  return cookie;
}

}  // namespace

Result<HeaderList> EncodeRcPrepare(const RcPrepareRequest& request) {
  REELFS_RETURN_IF_ERROR(CheckPrepare(request));
  REELFS_ASSIGN_OR_RETURN(std::string token, EncodeRcToken(request.token));
  HeaderList h;
  h.emplace_back(header::kProtocol, kRcProtocolName);
  h.emplace_back(header::kToken, std::move(token));
  h.emplace_back(header::kPsn, Hex(request.psn, 6));
  h.emplace_back(header::kCookie, Hex(request.cookie, 16));
  h.emplace_back(header::kOp, request.op == RcOp::kGet ? "GET" : "PUT");
  h.emplace_back(header::kTarget, request.target);
  h.emplace_back(header::kSize, std::to_string(request.size));
  h.emplace_back(header::kOffset, std::to_string(request.offset));
  return h;
}

Result<RcPrepareRequest> DecodeRcPrepare(const HeaderList& headers) {
  REELFS_ASSIGN_OR_RETURN(std::string_view protocol, Require(headers, header::kProtocol));
  if (!EqualsIgnoreCase(protocol, kRcProtocolName)) {
    return Status::InvalidArgument("x-amz-rdma-protocol: unsupported protocol");
  }
  RcPrepareRequest r;
  REELFS_ASSIGN_OR_RETURN(std::string_view token, Require(headers, header::kToken));
  REELFS_ASSIGN_OR_RETURN(r.token, DecodeRcToken(token));
  REELFS_ASSIGN_OR_RETURN(std::string_view psn, Require(headers, header::kPsn));
  REELFS_ASSIGN_OR_RETURN(uint64_t psn_value, ParseHexHeader(psn, header::kPsn, kMaxPsn));
  r.psn = static_cast<uint32_t>(psn_value);
  REELFS_ASSIGN_OR_RETURN(std::string_view cookie, Require(headers, header::kCookie));
  REELFS_ASSIGN_OR_RETURN(r.cookie, ParseCookie(cookie));
  REELFS_ASSIGN_OR_RETURN(std::string_view op, Require(headers, header::kOp));
  if (op == "GET") {
    r.op = RcOp::kGet;
  } else if (op == "PUT") {
    r.op = RcOp::kPut;
  } else {
    return Status::InvalidArgument("x-amz-rdma-op: expected GET or PUT");
  }
  REELFS_ASSIGN_OR_RETURN(std::string_view target, Require(headers, header::kTarget));
  r.target = std::string(target.substr(0, kMaxTargetLength + 1));  // CheckTarget rejects overlong
  REELFS_ASSIGN_OR_RETURN(std::string_view size, Require(headers, header::kSize));
  REELFS_ASSIGN_OR_RETURN(r.size, ParseDecimalHeader(size, header::kSize, UINT64_MAX));
  REELFS_ASSIGN_OR_RETURN(std::string_view offset, Require(headers, header::kOffset));
  REELFS_ASSIGN_OR_RETURN(r.offset, ParseDecimalHeader(offset, header::kOffset, UINT64_MAX));
  REELFS_RETURN_IF_ERROR(CheckPrepare(r));
  return r;
}

Result<HeaderList> EncodeRcPrepareReply(const RcPrepareReply& reply) {
  REELFS_RETURN_IF_ERROR(CheckRcTransport(reply.server_token, "prepare reply"));
  REELFS_RETURN_IF_ERROR(CheckPrintable(reply.session, header::kSession, kMaxSessionLength));
  if (reply.psn > kMaxPsn) return Status::InvalidArgument("x-amz-rdma-psn: wider than 24 bits");
  if (reply.qpn > kMaxQpn) return Status::InvalidArgument("x-amz-rdma-qpn: wider than 24 bits");
  REELFS_ASSIGN_OR_RETURN(std::string token, EncodeRcToken(reply.server_token));
  HeaderList h;
  h.emplace_back(header::kReply, "200:" + token);
  h.emplace_back(header::kSession, reply.session);
  h.emplace_back(header::kPsn, Hex(reply.psn, 6));
  h.emplace_back(header::kQpn, Hex(reply.qpn, 6));
  h.emplace_back(header::kMrAddr, Hex(reply.mr_addr, 16));
  h.emplace_back(header::kMrRkey, Hex(reply.mr_rkey, 8));
  return h;
}

Result<RcPrepareReply> DecodeRcPrepareReply(const HeaderList& headers) {
  RcPrepareReply r;
  REELFS_ASSIGN_OR_RETURN(std::string_view reply_text, Require(headers, header::kReply));
  REELFS_ASSIGN_OR_RETURN(RdmaReply reply, ParseRdmaReply(reply_text));
  if (reply.kind != RdmaReply::Kind::kSuccess || !reply.server_token) {
    return Status::InvalidArgument("x-amz-rdma-reply: a PREPARE reply must be 200:<server token>");
  }
  r.server_token = *reply.server_token;
  REELFS_RETURN_IF_ERROR(CheckRcTransport(r.server_token, "prepare reply"));
  REELFS_ASSIGN_OR_RETURN(std::string_view session, Require(headers, header::kSession));
  REELFS_RETURN_IF_ERROR(CheckPrintable(session, header::kSession, kMaxSessionLength));
  r.session = std::string(session);
  REELFS_ASSIGN_OR_RETURN(std::string_view psn, Require(headers, header::kPsn));
  REELFS_ASSIGN_OR_RETURN(uint64_t psn_value, ParseHexHeader(psn, header::kPsn, kMaxPsn));
  r.psn = static_cast<uint32_t>(psn_value);
  REELFS_ASSIGN_OR_RETURN(std::string_view qpn, Require(headers, header::kQpn));
  REELFS_ASSIGN_OR_RETURN(r.qpn, ParseQpn(qpn));
  REELFS_ASSIGN_OR_RETURN(std::string_view mr_addr, Require(headers, header::kMrAddr));
  REELFS_ASSIGN_OR_RETURN(r.mr_addr, ParseHexHeader(mr_addr, header::kMrAddr, UINT64_MAX));
  REELFS_ASSIGN_OR_RETURN(std::string_view mr_rkey, Require(headers, header::kMrRkey));
  REELFS_ASSIGN_OR_RETURN(uint64_t rkey, ParseHexHeader(mr_rkey, header::kMrRkey, UINT32_MAX));
  r.mr_rkey = static_cast<uint32_t>(rkey);
  return r;
}

Result<HeaderList> EncodeRcReady(const RcReadyRequest& request) {
  REELFS_RETURN_IF_ERROR(CheckPrintable(request.session, header::kSession, kMaxSessionLength));
  if (request.cookie == 0) return Status::InvalidArgument("x-amz-rdma-cookie: must be non-zero");
  if (request.qpn > kMaxQpn) return Status::InvalidArgument("x-amz-rdma-qpn: wider than 24 bits");
  HeaderList h;
  h.emplace_back(header::kSession, request.session);
  h.emplace_back(header::kCookie, Hex(request.cookie, 16));
  h.emplace_back(header::kQpn, Hex(request.qpn, 6));
  h.emplace_back(header::kMrAddr, Hex(request.mr_addr, 16));
  h.emplace_back(header::kMrRkey, Hex(request.mr_rkey, 8));
  return h;
}

Result<RcReadyRequest> DecodeRcReady(const HeaderList& headers) {
  RcReadyRequest r;
  REELFS_ASSIGN_OR_RETURN(std::string_view session, Require(headers, header::kSession));
  REELFS_RETURN_IF_ERROR(CheckPrintable(session, header::kSession, kMaxSessionLength));
  r.session = std::string(session);
  REELFS_ASSIGN_OR_RETURN(std::string_view cookie, Require(headers, header::kCookie));
  REELFS_ASSIGN_OR_RETURN(r.cookie, ParseCookie(cookie));
  REELFS_ASSIGN_OR_RETURN(std::string_view qpn, Require(headers, header::kQpn));
  REELFS_ASSIGN_OR_RETURN(r.qpn, ParseQpn(qpn));
  REELFS_ASSIGN_OR_RETURN(std::string_view mr_addr, Require(headers, header::kMrAddr));
  REELFS_ASSIGN_OR_RETURN(r.mr_addr, ParseHexHeader(mr_addr, header::kMrAddr, UINT64_MAX));
  REELFS_ASSIGN_OR_RETURN(std::string_view mr_rkey, Require(headers, header::kMrRkey));
  REELFS_ASSIGN_OR_RETURN(uint64_t rkey, ParseHexHeader(mr_rkey, header::kMrRkey, UINT32_MAX));
  r.mr_rkey = static_cast<uint32_t>(rkey);
  return r;
}

Result<HeaderList> EncodeRcReadyReply(const RcReadyReply& reply) {
  if (reply.cookie == 0) return Status::InvalidArgument("x-amz-rdma-cookie: must be non-zero");
  REELFS_RETURN_IF_ERROR(CheckPrintable(reply.etag, header::kEtag, kMaxSessionLength));
  HeaderList h;
  h.emplace_back(header::kBytesTransferred, std::to_string(reply.bytes_transferred));
  h.emplace_back(header::kCookie, Hex(reply.cookie, 16));
  h.emplace_back(header::kEtag, reply.etag);
  if (!reply.version_id.empty()) {
    REELFS_RETURN_IF_ERROR(CheckPrintable(reply.version_id, header::kVersionId, kMaxSessionLength));
    h.emplace_back(header::kVersionId, reply.version_id);
  }
  if (!reply.checksum.empty()) {
    REELFS_RETURN_IF_ERROR(CheckPrintable(reply.checksum, header::kChecksum, kMaxSessionLength));
    h.emplace_back(header::kChecksum, reply.checksum);
  }
  return h;
}

Result<RcReadyReply> DecodeRcReadyReply(const HeaderList& headers) {
  RcReadyReply r;
  REELFS_ASSIGN_OR_RETURN(std::string_view bytes, Require(headers, header::kBytesTransferred));
  REELFS_ASSIGN_OR_RETURN(r.bytes_transferred, ParseBytesTransferred(bytes));
  REELFS_ASSIGN_OR_RETURN(std::string_view cookie, Require(headers, header::kCookie));
  REELFS_ASSIGN_OR_RETURN(r.cookie, ParseCookie(cookie));
  REELFS_ASSIGN_OR_RETURN(std::string_view etag, Require(headers, header::kEtag));
  REELFS_RETURN_IF_ERROR(CheckPrintable(etag, header::kEtag, kMaxSessionLength));
  r.etag = std::string(etag);
  for (auto [name, out] :
       {std::pair{header::kVersionId, &r.version_id}, std::pair{header::kChecksum, &r.checksum}}) {
    REELFS_ASSIGN_OR_RETURN(std::optional<std::string_view> value, FindSingleHeader(headers, name));
    if (!value) continue;
    const std::string_view trimmed = Trim(*value);
    REELFS_RETURN_IF_ERROR(CheckPrintable(trimmed, name, kMaxSessionLength));
    *out = std::string(trimmed);
  }
  return r;
}

Result<HeaderList> EncodeRcCancel(const RcCancelRequest& request) {
  REELFS_RETURN_IF_ERROR(CheckPrintable(request.session, header::kSession, kMaxSessionLength));
  if (request.cookie == 0) return Status::InvalidArgument("x-amz-rdma-cookie: must be non-zero");
  HeaderList h;
  h.emplace_back(header::kSession, request.session);
  h.emplace_back(header::kCookie, Hex(request.cookie, 16));
  return h;
}

Result<RcCancelRequest> DecodeRcCancel(const HeaderList& headers) {
  RcCancelRequest r;
  REELFS_ASSIGN_OR_RETURN(std::string_view session, Require(headers, header::kSession));
  REELFS_RETURN_IF_ERROR(CheckPrintable(session, header::kSession, kMaxSessionLength));
  r.session = std::string(session);
  REELFS_ASSIGN_OR_RETURN(std::string_view cookie, Require(headers, header::kCookie));
  REELFS_ASSIGN_OR_RETURN(r.cookie, ParseCookie(cookie));
  return r;
}

Status CheckRcReadyReply(const RcReadyReply& reply, uint64_t cookie, uint64_t expected_bytes) {
  if (reply.cookie != cookie) {
    return Status::DataLoss("hipobj-rc-v2 READY reply echoes another transfer's cookie");
  }
  if (reply.bytes_transferred != expected_bytes) {
    return Status::DataLoss("hipobj-rc-v2 READY reply moved " +
                            std::to_string(reply.bytes_transferred) + " bytes, expected " +
                            std::to_string(expected_bytes));
  }
  return Status::Ok();
}

}  // namespace reelfs::rdmaio::wire

// RcToken: the 88-hex-character endpoint descriptor of AMD hipObject's RC transport, carried in
// `x-amz-rdma-token` by the hipobj-rc-v2 PREPARE request and returned by the server in
// `x-amz-rdma-reply: 200:<token>` (docs/protocols/rdma.md §2.2).
//
// Layout: 44 bytes, multi-byte integers little-endian, then hex-encoded (two characters a byte):
//
//   byte  0      transport  u8   0 = DC, 1 = RC
//   bytes 1..4   qpn        u32  queue pair number (24 significant bits)
//   bytes 5..20  gid        16 B in wire order
//   bytes 21..24 rkey       u32
//   bytes 25..32 addr       u64  start of the memory region
//   bytes 33..40 len        u64  length of the memory region
//   byte  41     port       u8   HCA port
//   bytes 42..43 lid        u16  0 on RoCE
//
// Thread-safety: a value type and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "rdmaio/wire/gid.h"

namespace reelfs::rdmaio::wire {

inline constexpr size_t kRcTokenBytes = 44;
inline constexpr size_t kRcTokenHexLength = 2 * kRcTokenBytes;  // 88
// Queue pair numbers are 24-bit in InfiniBand; a wider value cannot name a QP.
inline constexpr uint32_t kMaxQpn = 0xffffff;

enum class RcTransport : uint8_t { kDc = 0, kRc = 1 };

struct RcToken {
  RcTransport transport = RcTransport::kRc;
  uint32_t qpn = 0;
  Gid gid{};
  uint32_t rkey = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint8_t port = 1;
  uint16_t lid = 0;
  bool operator==(const RcToken&) const = default;
};

// 88 lowercase hex characters. kInvalidArgument if qpn exceeds 24 bits, length is 0 (we only mint
// tokens for windows that can hold data) or addr + length wraps past 2^64.
Result<std::string> EncodeRcToken(const RcToken& token);

// Accepts exactly 88 hex digits (either case) and nothing else: no whitespace, no prefix.
// kInvalidArgument (never a crash) for a wrong length, a non-hex character, an unknown transport,
// a qpn wider than 24 bits or a region that wraps. A zero length is accepted: a server token may
// describe only the server's queue pair (its region comes in x-amz-rdma-mr-* headers).
Result<RcToken> DecodeRcToken(std::string_view text);

}  // namespace reelfs::rdmaio::wire

// DcToken: the cuObject DC v1 descriptor (`CUOBJ_PROTO_RDMA_DC_V1`), the `x-amz-rdma-token` value
// that vgwrdma, NooBaa, Ceph RGW and MinIO AIStor accept (docs/protocols/rdma.md §2.1).
//
// 81 ASCII characters, seven colon-separated fixed-width lowercase hex fields:
//
//   addr(16) : size(8) : rkey(8) : lid(4) : dctn(6) : gid_present(1) : gid(32)
//
// It names a DC target QP and a memory window on the client; the server's DC initiator writes
// (GET) or reads (PUT) [addr, addr + size) directly, with no handshake. Data lands at `addr`: a
// ranged GET's object offset never becomes an offset into the window, so each request carries a
// token whose addr/size are that request's destination.
//
// Only the bare 81-character form is produced or accepted. Early AIStor clients appended
// ":<addr16>:<size16>"; NooBaa rejects anything but 81 characters, so we do too, with a message
// that names the legacy suffix.
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

inline constexpr size_t kDcTokenLength = 81;
// The size field is 32 bits wide, so one token describes at most 4 GiB - 1 bytes.
inline constexpr uint64_t kDcMaxWindowBytes = 0xffffffffULL;
// DC target numbers are 24-bit queue pair numbers.
inline constexpr uint32_t kMaxDctn = 0xffffff;

struct DcToken {
  uint64_t addr = 0;         // VA of this request's destination (host or GPU)
  uint64_t size = 0;         // bytes: GET = capacity, PUT = payload size; <= kDcMaxWindowBytes
  uint32_t rkey = 0;         // remote key of an MR covering [addr, addr + size)
  uint16_t lid = 0;          // 0 on RoCE
  uint32_t dctn = 0;         // DC target QP number, 24 bits
  bool gid_present = false;  // true on RoCE
  Gid gid{};
  bool operator==(const DcToken&) const = default;
};

// The 81-character form. kInvalidArgument if size is 0 or above kDcMaxWindowBytes, dctn is wider
// than 24 bits, or addr + size wraps.
Result<std::string> EncodeDcToken(const DcToken& token);

// Accepts exactly the 81-character form; hex digits of either case (servers parse with strtoull).
// kInvalidArgument naming the field for anything else: wrong length (the legacy suffix form gets
// its own message), misplaced or missing colons, non-hex characters, gid_present not 0/1, a zero
// size, a wrapping window. Never reads outside `text`.
Result<DcToken> DecodeDcToken(std::string_view text);

}  // namespace reelfs::rdmaio::wire

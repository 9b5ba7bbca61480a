#include "rdmaio/wire/rc_token.h"

#include <array>
#include <string>

#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire {
namespace {

// Byte offsets of the fields in the 44-byte little-endian record.
constexpr size_t kTransportAt = 0;
constexpr size_t kQpnAt = 1;
constexpr size_t kGidAt = 5;
constexpr size_t kRkeyAt = 21;
constexpr size_t kAddrAt = 25;
constexpr size_t kLenAt = 33;
constexpr size_t kPortAt = 41;
constexpr size_t kLidAt = 42;
static_assert(kLidAt + 2 == kRcTokenBytes, "the fields fill the record exactly");

using Record = std::array<uint8_t, kRcTokenBytes>;

void PutLe(Record* record, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) (*record)[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t GetLe(const Record& record, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint64_t>(record[at + i]) << (8 * i);
  return value;
}

Status CheckRegion(uint64_t addr, uint64_t length) {
  if (length != 0 && addr > UINT64_MAX - (length - 1)) {
    return Status::InvalidArgument("rc token: addr + len wraps past the end of the address space");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeRcToken(const RcToken& token) {
  if (token.transport != RcTransport::kDc && token.transport != RcTransport::kRc) {
    return Status::InvalidArgument("rc token: unknown transport");
  }
  if (token.qpn > kMaxQpn) return Status::InvalidArgument("rc token: qpn wider than 24 bits");
  if (token.length == 0) return Status::InvalidArgument("rc token: zero-length window");
  REELFS_RETURN_IF_ERROR(CheckRegion(token.addr, token.length));

  Record record{};
  PutLe(&record, kTransportAt, static_cast<uint8_t>(token.transport), 1);
  PutLe(&record, kQpnAt, token.qpn, 4);
  for (size_t i = 0; i < token.gid.size(); ++i) record[kGidAt + i] = token.gid[i];
  PutLe(&record, kRkeyAt, token.rkey, 4);
  PutLe(&record, kAddrAt, token.addr, 8);
  PutLe(&record, kLenAt, token.length, 8);
  PutLe(&record, kPortAt, token.port, 1);
  PutLe(&record, kLidAt, token.lid, 2);

  std::string out;
  out.reserve(kRcTokenHexLength);
  for (uint8_t byte : record) internal::AppendHex(&out, byte, 2);
  return out;
}

Result<RcToken> DecodeRcToken(std::string_view text) {
  if (text.size() != kRcTokenHexLength) {
    return Status::InvalidArgument("rc token: expected " + std::to_string(kRcTokenHexLength) +
                                   " hex characters, got " + std::to_string(text.size()));
  }
  Record record{};
  for (size_t i = 0; i < kRcTokenBytes; ++i) {
    const int hi = internal::HexDigit(text[2 * i]);
    const int lo = internal::HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("rc token: non-hex character at offset " +
                                     std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    }
    record[i] = static_cast<uint8_t>((hi << 4) | lo);
  }

  RcToken token;
  const uint64_t transport = GetLe(record, kTransportAt, 1);
  if (transport > 1) return Status::InvalidArgument("rc token: unknown transport");
  token.transport = static_cast<RcTransport>(transport);
  token.qpn = static_cast<uint32_t>(GetLe(record, kQpnAt, 4));
  if (token.qpn > kMaxQpn) return Status::InvalidArgument("rc token: qpn wider than 24 bits");
  for (size_t i = 0; i < token.gid.size(); ++i) token.gid[i] = record[kGidAt + i];
  token.rkey = static_cast<uint32_t>(GetLe(record, kRkeyAt, 4));
  token.addr = GetLe(record, kAddrAt, 8);
  token.length = GetLe(record, kLenAt, 8);
  token.port = static_cast<uint8_t>(GetLe(record, kPortAt, 1));
  token.lid = static_cast<uint16_t>(GetLe(record, kLidAt, 2));
  REELFS_RETURN_IF_ERROR(CheckRegion(token.addr, token.length));
  return token;
}

}  // namespace reelfs::rdmaio::wire

#include "rdmaio/wire/dc_token.h"

#include <array>
#include <string>

#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire {
namespace {

struct FieldSpec {
  const char* name;
  size_t at;     // offset of the first digit
  size_t width;  // hex digits
};

// Offsets follow from the widths: each field is followed by one ':' except the last.
constexpr std::array<FieldSpec, 7> kFields = {{
    {"addr", 0, 16},
    {"size", 17, 8},
    {"rkey", 26, 8},
    {"lid", 35, 4},
    {"dctn", 40, 6},
    {"gid_present", 47, 1},
    {"gid", 49, 32},
}};
static_assert(kFields[6].at + kFields[6].width == kDcTokenLength, "fields fill the token");

// The suffix form is the 81-character descriptor plus ":" + 16 + ":" + 16 characters.
constexpr size_t kLegacySuffixLength = kDcTokenLength + 1 + 16 + 1 + 16;

Status CheckWindow(uint64_t addr, uint64_t size) {
  if (size == 0) return Status::InvalidArgument("dc token: zero-size window");
  if (addr > UINT64_MAX - (size - 1)) {
    return Status::InvalidArgument("dc token: addr + size wraps past the end of the address space");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeDcToken(const DcToken& token) {
  if (token.size > kDcMaxWindowBytes) {
    return Status::InvalidArgument("dc token: size above 4 GiB - 1 does not fit the 32-bit field");
  }
  if (token.dctn > kMaxDctn) return Status::InvalidArgument("dc token: dctn wider than 24 bits");
  REELFS_RETURN_IF_ERROR(CheckWindow(token.addr, token.size));

  std::string out;
  out.reserve(kDcTokenLength);
  internal::AppendHex(&out, token.addr, 16);
  out.push_back(':');
  internal::AppendHex(&out, token.size, 8);
  out.push_back(':');
  internal::AppendHex(&out, token.rkey, 8);
  out.push_back(':');
  internal::AppendHex(&out, token.lid, 4);
  out.push_back(':');
  internal::AppendHex(&out, token.dctn, 6);
  out.push_back(':');
  out.push_back(token.gid_present ? '1' : '0');
  out.push_back(':');
  for (uint8_t byte : token.gid) internal::AppendHex(&out, byte, 2);
  return out;
}

Result<DcToken> DecodeDcToken(std::string_view text) {
  if (text.size() != kDcTokenLength) {
    if (text.size() == kLegacySuffixLength && text[kDcTokenLength] == ':') {
      return Status::InvalidArgument(
          "dc token: legacy ':addr:size' suffix form is not accepted; send the bare 81 characters");
    }
    return Status::InvalidArgument("dc token: expected 81 characters, got " +
                                   std::to_string(text.size()));
  }
  for (size_t i = 0; i + 1 < kFields.size(); ++i) {
    const size_t colon = kFields[i].at + kFields[i].width;
    if (text[colon] != ':') {
      return Status::InvalidArgument("dc token: expected ':' after field " +
                                     std::string(kFields[i].name));
    }
  }
  std::array<uint64_t, 6> values{};  // every field but the 128-bit gid
  for (size_t i = 0; i < values.size(); ++i) {
    if (!internal::ParseFixedHex(text.substr(kFields[i].at, kFields[i].width), &values[i])) {
      return Status::InvalidArgument("dc token: field " + std::string(kFields[i].name) +
                                     " is not " + std::to_string(kFields[i].width) + " hex digits");
    }
  }
  DcToken token;
  const std::string_view gid_text = text.substr(kFields[6].at, kFields[6].width);
  for (size_t i = 0; i < token.gid.size(); ++i) {
    const int hi = internal::HexDigit(gid_text[2 * i]);
    const int lo = internal::HexDigit(gid_text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return Status::InvalidArgument("dc token: field gid is not 32 hex digits");
    token.gid[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  if (values[5] > 1) return Status::InvalidArgument("dc token: gid_present must be 0 or 1");
  token.addr = values[0];
  token.size = values[1];
  token.rkey = static_cast<uint32_t>(values[2]);
  token.lid = static_cast<uint16_t>(values[3]);
  token.dctn = static_cast<uint32_t>(values[4]);
  token.gid_present = values[5] == 1;
  REELFS_RETURN_IF_ERROR(CheckWindow(token.addr, token.size));
  return token;
}

}  // namespace reelfs::rdmaio::wire

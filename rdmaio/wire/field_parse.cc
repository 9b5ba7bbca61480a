#include <limits>
#include <string>

#include "common/strings.h"
#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire::internal {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseFixedHex(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 16) return false;
  uint64_t value = 0;
  for (char c : text) {
    const int digit = HexDigit(c);
    if (digit < 0) return false;
    value = (value << 4) | static_cast<uint64_t>(digit);
  }
  *out = value;
  return true;
}

void AppendHex(std::string* out, uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out->push_back(kDigits[(value >> shift) & 0xf]);
  }
}

Result<uint64_t> ParseHexHeader(std::string_view text, std::string_view field, uint64_t max) {
  text = Trim(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  uint64_t value = 0;
  if (!ParseFixedHex(text, &value)) {
    return Status::InvalidArgument(std::string(field) + ": expected 1 to 16 hex digits");
  }
  if (value > max) {
    return Status::InvalidArgument(std::string(field) + ": value out of range");
  }
  return value;
}

Result<uint64_t> ParseDecimalHeader(std::string_view text, std::string_view field, uint64_t max) {
  text = Trim(text);
  if (text.empty() || text.size() > 20) {
    return Status::InvalidArgument(std::string(field) + ": expected 1 to 20 decimal digits");
  }
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument(std::string(field) + ": not a decimal number");
    }
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return Status::InvalidArgument(std::string(field) + ": value out of range");
    }
    value = value * 10 + digit;
  }
  if (value > max) return Status::InvalidArgument(std::string(field) + ": value out of range");
  return value;
}

}  // namespace reelfs::rdmaio::wire::internal

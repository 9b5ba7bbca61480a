// Strict field parsers shared by the token and header codecs of rdmaio/wire (module-internal).
//
// Every value here arrives from the network, so each parser bounds its input before touching it,
// never throws, never reads past the view, and reports which field was wrong without echoing the
// value (a token is a capability: address + rkey of a writable window).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::rdmaio::wire::internal {

// Value of one hex digit (either case), or -1.
int HexDigit(char c);

// Exactly `text.size()` (1..16) hex digits, nothing else; false otherwise.
bool ParseFixedHex(std::string_view text, uint64_t* out);

// Appends `value` as exactly `digits` lowercase hex digits (zero-padded; `value` must fit).
void AppendHex(std::string* out, uint64_t value, int digits);

// A header value holding a hex number: optional "0x"/"0X", 1..16 digits, value <= `max`.
// kInvalidArgument naming `field` otherwise.
Result<uint64_t> ParseHexHeader(std::string_view text, std::string_view field, uint64_t max);

// A header value holding a decimal number: 1..20 digits, no sign, no overflow, value <= `max`.
Result<uint64_t> ParseDecimalHeader(std::string_view text, std::string_view field, uint64_t max);

}  // namespace reelfs::rdmaio::wire::internal

// Small string helpers for protocol text: header names and values, units, S3 codes, ETags.
// Case folding is ASCII only, so no result depends on the process locale (std::tolower does).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace reelfs {

// HTTP's optional whitespace (RFC 9110 §5.6.3): what surrounds a header value or a list item.
inline constexpr std::string_view kOws = " \t";
// Space, tab and line ends: what surrounds an XML text node, a config line or a canonical value.
inline constexpr std::string_view kWhitespace = " \t\r\n";

constexpr bool IsOws(char c) { return c == ' ' || c == '\t'; }
constexpr bool IsWhitespace(char c) { return IsOws(c) || c == '\r' || c == '\n'; }
constexpr char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string Lower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);

// `s` without the leading and trailing characters that are in `chars`.
std::string_view Trim(std::string_view s, std::string_view chars = kOws);

// `s` without one pair of surrounding double quotes ("\"abc\"" -> "abc"); as it is otherwise.
std::string_view Unquote(std::string_view s);

}  // namespace reelfs

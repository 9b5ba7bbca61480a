#include "s3/client/redact.h"

#include <algorithm>
#include <array>

#include "common/strings.h"

namespace reelfs::s3 {
namespace {

size_t FindNoCase(std::string_view s, std::string_view needle, size_t from) {
  for (size_t i = from; i + needle.size() <= s.size(); ++i) {
    if (StartsWithIgnoreCase(s.substr(i), needle)) return i;
  }
  return std::string_view::npos;
}

constexpr std::array<std::string_view, 2> kSecretHeaders = {"authorization:",
                                                            "x-amz-security-token:"};
constexpr std::array<std::string_view, 3> kSecretParams = {
    "x-amz-signature=", "x-amz-credential=", "x-amz-security-token="};

std::string RedactLine(std::string_view line) {
  std::string_view trimmed = line;
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
    trimmed.remove_prefix(1);
  }
  for (std::string_view h : kSecretHeaders) {
    if (StartsWithIgnoreCase(trimmed, h)) {
      return std::string(line.substr(0, line.size() - trimmed.size() + h.size())) + " " +
             std::string(kRedacted);
    }
  }
  std::string out(line);
  for (std::string_view p : kSecretParams) {
    size_t pos = 0;
    while ((pos = FindNoCase(out, p, pos)) != std::string::npos) {
      // Only a parameter start: after '?', '&' or at the beginning.
      if (pos != 0 && out[pos - 1] != '?' && out[pos - 1] != '&') {
        pos += p.size();
        continue;
      }
      const size_t value = pos + p.size();
      size_t end = out.find_first_of("& \r\n#", value);
      if (end == std::string::npos) end = out.size();
      out.replace(value, end - value, kRedacted);
      pos = value + kRedacted.size();
    }
  }
  return out;
}

}  // namespace

std::string RedactSecrets(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    // Keep a trailing '\r' out of the masked value's way: RedactLine treats it as a terminator.
    std::string_view body = line;
    const bool cr = !body.empty() && body.back() == '\r';
    if (cr) body.remove_suffix(1);
    out += RedactLine(body);
    if (cr) out += '\r';
    if (nl == std::string_view::npos) break;
    out += '\n';
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace reelfs::s3

#include "s3/protocol/uri.h"

#include <algorithm>
#include <string>
#include <vector>

namespace reelfs::s3 {
namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kUpperHex[c >> 4]);
      out.push_back(kUpperHex[c & 0x0f]);
    }
  }
  return out;
}

Result<std::string> UriDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    const int hi = i + 1 < s.size() ? HexValue(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("malformed percent-escape at offset " + std::to_string(i));
    }
    // %00 decodes to a NUL byte like any other escape; callers that build file names from the
    // result (the gateway's key validation) reject it there, where the reason is known.
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

Result<QueryParams> ParseQuery(std::string_view raw_query) {
  QueryParams params;
  while (!raw_query.empty()) {
    const size_t amp = raw_query.find('&');
    const std::string_view item = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view() : raw_query.substr(amp + 1);
    if (item.empty()) continue;  // "a=1&&b=2" and a trailing '&' carry no parameter
    const size_t eq = item.find('=');
    REELFS_ASSIGN_OR_RETURN(std::string name, UriDecode(item.substr(0, eq)));
    std::string value;
    if (eq != std::string_view::npos) {
      REELFS_ASSIGN_OR_RETURN(value, UriDecode(item.substr(eq + 1)));
    }
    params.emplace_back(std::move(name), std::move(value));
  }
  return params;
}

std::string CanonicalQueryString(const QueryParams& params) {
  // Sorting happens on the encoded form: SigV4 defines the order by the bytes that are signed,
  // which differs from the decoded order when '%' (0x25) is involved.
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(params.size());
  for (const auto& [name, value] : params) {
    encoded.emplace_back(UriEncode(name, /*keep_slash=*/false),
                         UriEncode(value, /*keep_slash=*/false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

}  // namespace reelfs::s3

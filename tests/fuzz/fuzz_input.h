// Helpers shared by the fuzz targets: turn the fuzzer's bytes into the shapes parsers take.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reelfs::fuzz {

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// "name: value" (or "name:value") lines, '\n' or "\r\n" separated, up to the first empty line;
// the rest of the input goes to *rest when given. A line without ':' becomes a header with an
// empty value. Names are kept as written unless `lowercase` (s3/client and the gateway lowercase
// them before any parser sees them).
inline std::vector<std::pair<std::string, std::string>> SplitHeaders(
    std::string_view in, bool lowercase, std::string_view* rest = nullptr) {
  std::vector<std::pair<std::string, std::string>> headers;
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    size_t colon = line.find(':');
    std::string name(line.substr(0, colon));
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    if (lowercase) {
      for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    headers.emplace_back(std::move(name), std::string(value));
  }
  if (rest != nullptr) *rest = in;
  return headers;
}

// A property the parser promises did not hold: abort so libFuzzer records the input.
[[noreturn]] inline void Violated(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace reelfs::fuzz

#define REELFS_FUZZ_CHECK(cond)                   \
  do {                                            \
    if (!(cond)) ::reelfs::fuzz::Violated(#cond); \
  } while (0)

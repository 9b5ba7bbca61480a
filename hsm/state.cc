#include "hsm/state.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "common/strings.h"

namespace reelfs::hsm {
namespace {

constexpr std::array<std::pair<State, std::string_view>, 5> kNames = {{
    {State::kUnknown, "unknown"},
    {State::kOnline, "online"},
    {State::kOffline, "offline"},
    {State::kStaging, "staging"},
    {State::kRestored, "restored"},
}};

template <class T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

const std::string* Hint(const s3::ObjectInfo& info, std::string_view name) {
  auto it = info.hints.find(std::string(name));
  return it == info.hints.end() ? nullptr : &it->second;
}

}  // namespace

std::string_view StateName(State state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

std::optional<State> ParseStateName(std::string_view name) {
  for (const auto& [s, n] : kNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

bool IsArchiveClass(std::string_view storage_class) {
  return EqualsIgnoreCase(storage_class, "GLACIER") ||
         EqualsIgnoreCase(storage_class, "DEEP_ARCHIVE");
}

std::optional<TapeHint> TapeHintOf(const s3::ObjectInfo& info) {
  const std::string* cartridge = Hint(info, "x-reelfs-tape-cartridge");
  if (cartridge == nullptr || cartridge->empty()) return std::nullopt;
  TapeHint hint;
  hint.cartridge = *cartridge;
  if (const std::string* block = Hint(info, "x-reelfs-tape-block")) {
    hint.block = ParseNumber<uint64_t>(*block);
  }
  if (const std::string* position = Hint(info, "x-reelfs-tape-position")) {
    // "wrap=12,lpos=34567": key=value pairs separated by ',', unknown keys ignored.
    std::string_view rest = *position;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view pair = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      size_t eq = pair.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = pair.substr(0, eq);
      std::string_view value = pair.substr(eq + 1);
      if (key == "wrap") hint.wrap = ParseNumber<uint32_t>(value);
      if (key == "lpos") hint.lpos = ParseNumber<uint64_t>(value);
    }
  }
  return hint;
}

State Classify(const s3::ObjectInfo& info, const LedgerView& ledger, s3::WallTime now) {
  if (!IsArchiveClass(info.storage_class)) {
    if (info.restore.has_value() && info.restore->ongoing) return State::kStaging;
    return State::kOnline;
  }
  if (info.restore.has_value()) {
    const s3::RestoreInfo& r = *info.restore;
    if (r.ongoing) return State::kStaging;
    if (r.expiry.has_value() && !r.expiry_is_placeholder && *r.expiry <= now) {
      return ledger.requested ? State::kStaging : State::kOffline;
    }
    return State::kRestored;
  }
  return ledger.requested ? State::kStaging : State::kOffline;
}

}  // namespace reelfs::hsm

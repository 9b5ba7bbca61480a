#include "s3/protocol/restore_header.h"

#include <chrono>
#include <optional>
#include <string>

#include "common/strings.h"
#include "s3/protocol/time_format.h"

namespace reelfs::s3 {
namespace {

// versitygw answers every online file with expiry-date="Fri, 2 Dec 2050 00:00:00 GMT", a fixed
// value "not used but provided for client glacier compatibility" (versitygw source). We
// flag any expiry within 2050 rather than that one instant, in case a build formats the day
// differently; a real AWS restore ending in 2050 would need Days > 8000, which no staging
// workflow asks for.
constexpr std::chrono::year kPlaceholderYear{2050};

std::optional<bool> ParseBool(std::string_view s) {
  const std::string l = Lower(Trim(s));
  if (l == "true") return true;
  if (l == "false") return false;
  return std::nullopt;
}

Status Malformed(std::string_view value, std::string_view why) {
  return Status::InvalidArgument("malformed x-amz-restore '" + std::string(value.substr(0, 200)) +
                                 "': " + std::string(why));
}

bool IsPlaceholder(WallTime t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  return ymd.year() == kPlaceholderYear;
}

}  // namespace

Result<RestoreInfo> ParseRestoreHeader(std::string_view value) {
  const std::string_view original = value;
  value = Trim(value);
  if (value.empty()) return Malformed(original, "empty");

  // versitygw before 2026-03 sent a bare true/false (possibly quoted by a proxy).
  std::string_view bare = value;
  if (bare.size() >= 2 && bare.front() == '"' && bare.back() == '"') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (std::optional<bool> b = ParseBool(bare)) return RestoreInfo{.ongoing = *b};

  // key="value" pairs separated by commas; quoted values may contain commas (the date does).
  std::optional<bool> ongoing;
  std::optional<WallTime> expiry;
  size_t pos = 0;
  while (pos < value.size()) {
    while (pos < value.size() && (IsOws(value[pos]) || value[pos] == ',')) ++pos;
    if (pos == value.size()) break;
    const size_t eq = value.find('=', pos);
    if (eq == std::string_view::npos) return Malformed(original, "expected key=value");
    const std::string key = Lower(Trim(value.substr(pos, eq - pos)));
    if (key.empty() || key.find_first_of(",\"") != std::string::npos) {
      return Malformed(original, "bad key");
    }
    pos = eq + 1;
    while (pos < value.size() && IsOws(value[pos])) ++pos;
    std::string_view item;
    if (pos < value.size() && value[pos] == '"') {
      const size_t close = value.find('"', pos + 1);
      if (close == std::string_view::npos) return Malformed(original, "unterminated quote");
      item = value.substr(pos + 1, close - pos - 1);
      pos = close + 1;
      while (pos < value.size() && IsOws(value[pos])) ++pos;
      if (pos < value.size() && value[pos] != ',') {
        return Malformed(original, "text after a quoted value");
      }
    } else {
      const size_t comma = value.find(',', pos);
      item = Trim(value.substr(pos, comma == std::string_view::npos ? value.npos : comma - pos));
      pos = comma == std::string_view::npos ? value.size() : comma;
    }

    if (key == "ongoing-request") {
      if (ongoing) return Malformed(original, "repeated ongoing-request");
      ongoing = ParseBool(item);
      if (!ongoing) return Malformed(original, "ongoing-request is neither true nor false");
    } else if (key == "expiry-date") {
      if (expiry) return Malformed(original, "repeated expiry-date");
      Result<WallTime> t = ParseHttpDate(Trim(item));
      if (!t.ok()) t = ParseIso8601(Trim(item));  // some servers write ISO 8601
      if (!t.ok()) return Malformed(original, "expiry-date is not a date");
      expiry = *t;
    }
    // Other keys (e.g. a future "restore-request-date") carry nothing we use.
  }
  if (!ongoing) return Malformed(original, "no ongoing-request");
  RestoreInfo info{.ongoing = *ongoing, .expiry = expiry};
  info.expiry_is_placeholder = expiry && IsPlaceholder(*expiry);
  return info;
}

std::string FormatRestoreHeader(const RestoreInfo& info) {
  if (info.ongoing) return "ongoing-request=\"true\"";
  std::string out = "ongoing-request=\"false\"";
  if (info.expiry) out += ", expiry-date=\"" + FormatHttpDate(*info.expiry) + "\"";
  return out;
}

}  // namespace reelfs::s3

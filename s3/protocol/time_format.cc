#include "s3/protocol/time_format.h"

#include <array>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

namespace reelfs::s3 {
namespace {

using std::chrono::system_clock;

// Names are spelled out instead of using strptime %a/%b, which follow the C locale of the
// process and would refuse HTTP dates under, say, LC_TIME=de_DE.
constexpr std::array<std::string_view, 7> kWeekdays = {"Sun", "Mon", "Tue", "Wed",
                                                       "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongWeekdays = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct CivilTime {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
  int64_t nanos = 0;
};

bool ValidFields(const CivilTime& c) {
  // Second 60 is accepted (leap second as written by some servers); timegm folds it over.
  return c.month >= 1 && c.month <= 12 && c.day >= 1 && c.day <= 31 && c.hour >= 0 &&
         c.hour <= 23 && c.minute >= 0 && c.minute <= 59 && c.second >= 0 && c.second <= 60;
}

Result<system_clock::time_point> FromCivil(const CivilTime& c, std::string_view original) {
  if (!ValidFields(c)) {
    return Status::InvalidArgument("time out of range: '" + std::string(original) + "'");
  }
  std::tm tm{};
  tm.tm_year = c.year - 1900;
  tm.tm_mon = c.month - 1;
  tm.tm_mday = c.day;
  tm.tm_hour = c.hour;
  tm.tm_min = c.minute;
  tm.tm_sec = c.second;
  const std::time_t secs = timegm(&tm);
  // timegm normalizes Feb 31 into March; a date that moved was not a real date.
  if (tm.tm_mday != c.day && c.second != 60) {
    return Status::InvalidArgument("no such date: '" + std::string(original) + "'");
  }
  // system_clock counts nanoseconds in 64 bits (libstdc++): about years 1678 to 2262. A four-digit
  // year reaches past both ends, and the conversion below would overflow (undefined behaviour,
  // found by tests/fuzz). A day of margin leaves room for an ISO 8601 offset.
  constexpr int64_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(system_clock::duration::max()).count() -
      86400;
  if (secs > kLimit || secs < -kLimit) {
    return Status::InvalidArgument("time out of range: '" + std::string(original) + "'");
  }
  return system_clock::time_point(std::chrono::duration_cast<system_clock::duration>(
      std::chrono::seconds(secs) + std::chrono::nanoseconds(c.nanos)));
}

// A minimal cursor over the input; every Read* fails instead of reading past the end.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool done() const { return pos_ == s_.size(); }
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool Consume(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  void SkipSpaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  // Reads between min_digits and max_digits decimal digits.
  std::optional<int> ReadInt(size_t min_digits, size_t max_digits) {
    size_t n = 0;
    int v = 0;
    while (pos_ < s_.size() && n < max_digits && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      ++pos_;
      ++n;
    }
    if (n < min_digits) return std::nullopt;
    return v;
  }
  std::string_view ReadAlpha() {
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           ((s_[pos_] >= 'A' && s_[pos_] <= 'Z') || (s_[pos_] >= 'a' && s_[pos_] <= 'z'))) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }
  // Fraction digits after a '.', any length; keeps nanosecond precision, drops the rest.
  int64_t ReadFractionNanos(bool* ok) {
    int64_t nanos = 0;
    int64_t scale = 100'000'000;
    size_t n = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      nanos += (s_[pos_] - '0') * scale;
      scale /= 10;
      ++pos_;
      ++n;
    }
    *ok = n > 0;
    return nanos;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

std::optional<int> MonthFromName(std::string_view name) {
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (name == kMonths[i]) return static_cast<int>(i) + 1;
  }
  return std::nullopt;
}

bool IsWeekdayName(std::string_view name) {
  for (size_t i = 0; i < kWeekdays.size(); ++i) {
    if (name == kWeekdays[i] || name == kLongWeekdays[i]) return true;
  }
  return false;
}

bool ReadClock(Cursor& c, CivilTime& t) {
  auto h = c.ReadInt(1, 2);
  if (!h || !c.Consume(':')) return false;
  auto m = c.ReadInt(2, 2);
  if (!m || !c.Consume(':')) return false;
  auto s = c.ReadInt(2, 2);
  if (!s) return false;
  t.hour = *h;
  t.minute = *m;
  t.second = *s;
  return true;
}

Status Malformed(std::string_view what, std::string_view s) {
  return Status::InvalidArgument("malformed " + std::string(what) + ": '" + std::string(s) + "'");
}

}  // namespace

Result<system_clock::time_point> ParseIso8601(std::string_view s) {
  // "YYYY-MM-DDTHH:MM:SS[.fff...]Z"; a numeric offset "+hh:mm" is accepted as well because
  // some S3-compatible servers write one.
  Cursor c(s);
  CivilTime t;
  auto y = c.ReadInt(4, 4);
  if (!y || !c.Consume('-')) return Malformed("ISO 8601 time", s);
  auto mo = c.ReadInt(2, 2);
  if (!mo || !c.Consume('-')) return Malformed("ISO 8601 time", s);
  auto d = c.ReadInt(2, 2);
  if (!d || !(c.Consume('T') || c.Consume('t'))) return Malformed("ISO 8601 time", s);
  t.year = *y;
  t.month = *mo;
  t.day = *d;
  if (!ReadClock(c, t)) return Malformed("ISO 8601 time", s);
  if (c.Consume('.')) {
    bool ok = false;
    t.nanos = c.ReadFractionNanos(&ok);
    if (!ok) return Malformed("ISO 8601 time", s);
  }
  int offset_seconds = 0;
  const bool utc = c.Consume('Z') || c.Consume('z');
  if (!utc && (c.Peek('+') || c.Peek('-'))) {
    const int sign = c.Consume('-') ? -1 : (c.Consume('+'), 1);
    auto oh = c.ReadInt(2, 2);
    c.Consume(':');
    auto om = c.ReadInt(2, 2);
    if (!oh || !om || *oh > 23 || *om > 59) return Malformed("ISO 8601 time", s);
    offset_seconds = sign * (*oh * 3600 + *om * 60);
  } else if (!utc) {
    return Malformed("ISO 8601 time", s);
  }
  if (!c.done()) return Malformed("ISO 8601 time", s);
  REELFS_ASSIGN_OR_RETURN(auto tp, FromCivil(t, s));
  return tp - std::chrono::seconds(offset_seconds);
}

Result<system_clock::time_point> ParseHttpDate(std::string_view s) {
  // RFC 9110 §5.6.7: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" (also with a one-digit day, as
  // versitygw writes), obsolete RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" and asctime
  // "Sun Nov  6 08:49:37 1994". The weekday is checked for form only, not against the date.
  Cursor c(s);
  CivilTime t;
  c.SkipSpaces();
  const std::string_view weekday = c.ReadAlpha();
  if (!IsWeekdayName(weekday)) return Malformed("HTTP date", s);
  if (c.Consume(',')) {
    c.SkipSpaces();
    auto d = c.ReadInt(1, 2);
    if (!d) return Malformed("HTTP date", s);
    t.day = *d;
    if (c.Consume('-')) {  // RFC 850: DD-Mon-YY
      auto mo = MonthFromName(c.ReadAlpha());
      if (!mo || !c.Consume('-')) return Malformed("HTTP date", s);
      auto y = c.ReadInt(2, 4);
      if (!y) return Malformed("HTTP date", s);
      t.month = *mo;
      // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
      t.year = *y >= 100 ? *y : (*y < 70 ? 2000 + *y : 1900 + *y);
    } else {
      c.SkipSpaces();
      auto mo = MonthFromName(c.ReadAlpha());
      c.SkipSpaces();
      auto y = c.ReadInt(4, 4);
      if (!mo || !y) return Malformed("HTTP date", s);
      t.month = *mo;
      t.year = *y;
    }
    c.SkipSpaces();
    if (!ReadClock(c, t)) return Malformed("HTTP date", s);
    c.SkipSpaces();
    const std::string_view zone = c.ReadAlpha();
    if (zone != "GMT" && zone != "UTC") return Malformed("HTTP date", s);
  } else {  // asctime: "Sun Nov  6 08:49:37 1994"
    c.SkipSpaces();
    auto mo = MonthFromName(c.ReadAlpha());
    c.SkipSpaces();
    auto d = c.ReadInt(1, 2);
    c.SkipSpaces();
    if (!mo || !d || !ReadClock(c, t)) return Malformed("HTTP date", s);
    c.SkipSpaces();
    auto y = c.ReadInt(4, 4);
    if (!y) return Malformed("HTTP date", s);
    t.month = *mo;
    t.day = *d;
    t.year = *y;
  }
  c.SkipSpaces();
  if (!c.done()) return Malformed("HTTP date", s);
  return FromCivil(t, s);
}

}  // namespace reelfs::s3

// Parsers for the time formats S3 uses: ISO 8601 in XML ("2009-10-12T17:50:30.000Z"), IMF-fixdate
// / RFC 1123 in headers ("Sun, 06 Nov 1994 08:49:37 GMT"). Lenient about single-digit days
// ("Fri, 2 Dec 2050 ...", seen from versitygw) and fractional seconds. The formatters
// (FormatIso8601, FormatHttpDate, ...) are common/time_format.h's, shared with the rest.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time_format.h"

namespace reelfs::s3 {

Result<std::chrono::system_clock::time_point> ParseIso8601(std::string_view s);
Result<std::chrono::system_clock::time_point> ParseHttpDate(std::string_view s);

}  // namespace reelfs::s3

// The x-amz-restore header, in every variant seen in the wild (AWS's HeadObject reference, and
// versitygw's generations: docs/gateway.md "What the versitygw personality imitates"):
//   absent                                            -> no information (caller's nullopt)
//   ongoing-request="true"                            -> restore running
//   ongoing-request="false", expiry-date="<RFC1123>"  -> restored until expiry
//   ongoing-request="false"                           -> restored, no expiry (versitygw 2026-03)
//   true / false (bare, versitygw before 2026-03)     -> running / restored
// Keys in any order and case, extra whitespace, unknown keys ignored; the 2050 placeholder
// expiry of versitygw is flagged as such (any expiry within the year 2050). Anything else,
// including an empty value or ongoing-request="maybe", is kInvalidArgument.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

Result<RestoreInfo> ParseRestoreHeader(std::string_view value);
// AWS form: ongoing-request="true" or ongoing-request="false", expiry-date="..." (when known).
std::string FormatRestoreHeader(const RestoreInfo& info);

}  // namespace reelfs::s3

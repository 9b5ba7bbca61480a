// Redaction of secrets in text that may reach a log: libcurl's verbose output (headers in and out,
// request lines with presigned queries).
//
// Masked: the values of Authorization and X-Amz-Security-Token headers (any case), and the values
// of the X-Amz-Signature, X-Amz-Credential and X-Amz-Security-Token query parameters. Everything
// else passes unchanged, so the log stays useful.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace reelfs::s3 {

inline constexpr std::string_view kRedacted = "<redacted>";

std::string RedactSecrets(std::string_view text);

}  // namespace reelfs::s3

// URI encoding as SigV4 and S3 define it (RFC 3986 unreserved set: A-Z a-z 0-9 - . _ ~).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace reelfs::s3 {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes every byte outside the unreserved set with uppercase hex. '/' is kept when
// `keep_slash` (object key in a path), encoded otherwise (query values).
std::string UriEncode(std::string_view s, bool keep_slash);

// Decodes %XX escapes; '+' is kept as '+' (S3 paths). Malformed escapes are an error.
Result<std::string> UriDecode(std::string_view s);

// Parses "a=b&c=d&flag" into decoded pairs, in order ("flag" -> value "").
Result<QueryParams> ParseQuery(std::string_view raw_query);

// SigV4 canonical query string: each name and value UriEncoded (slash encoded), sorted by name
// then value, joined with '&'.
std::string CanonicalQueryString(const QueryParams& params);

}  // namespace reelfs::s3

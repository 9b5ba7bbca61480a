// ObjectInfo from the headers of a HEAD or GET response: Content-Length, ETag, Last-Modified,
// Content-Type, x-amz-storage-class (absent means STANDARD), x-amz-restore, x-amz-meta-* and the
// x-reelfs-* hints of the reference gateway. Unparseable optional headers are logged at debug
// and left unset: a quirky server must not make an object unreadable.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "s3/types.h"

namespace reelfs::s3 {

// An ETag header value as ObjectInfo::etag keeps it: surrounding quotes removed, and the weak
// marker of W/"..." too (IsWeakEtag tells them apart where it matters: If-Match never matches a
// weak ETag). The one place the client strips ETags, so every path compares alike.
std::string StripEtag(std::string_view etag);
bool IsWeakEtag(std::string_view etag);

ObjectInfo ObjectInfoFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::string key);

}  // namespace reelfs::s3

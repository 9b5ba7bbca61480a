// ObjectInfo from the headers of a HEAD or GET response: Content-Length, ETag, Last-Modified,
// Content-Type, x-amz-storage-class (absent means STANDARD), x-amz-restore, x-amz-meta-* and the
// x-reelfs-* hints of the reference gateway. Unparseable optional headers are logged at debug
// and left unset: a quirky server must not make an object unreadable.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "s3/types.h"

namespace reelfs::s3 {

ObjectInfo ObjectInfoFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::string key);

}  // namespace reelfs::s3

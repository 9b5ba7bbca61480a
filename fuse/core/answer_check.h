// CheckGetAnswer: a GET (or data-channel fetch) answer judged against what a file handle pinned
// at open (docs/semantics.md "Reads"). A server that ignores If-Match answers with another
// object's bytes, which must never be reported as the file's: a different ETag is the object
// changed under the handle (kFailedPrecondition + kObjectChanged, ESTALE, as the 412 the server
// should have sent); a different total size, or more bytes than were asked for, is an answer that
// contradicts itself (kDataLoss, EIO). An answer without an ETag or a size says nothing either way
// and is judged by its length alone. Shared by the prefetcher's parts and direct reads.
//
// Thread-safety: pure functions. Internal to fuse/core.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "fuse/core/prefetcher.h"
#include "s3/etag.h"

namespace reelfs::fuse::detail {

using s3::BareEtag;

// `offset`/`asked`: the range requested; `etag`, `object_size` (0: unknown) and `bytes` (body
// bytes delivered): what came back.
[[nodiscard]] Status CheckGetAnswer(const ObjectRef& object, uint64_t offset, uint64_t asked,
                                    std::string_view etag, uint64_t object_size, uint64_t bytes);

}  // namespace reelfs::fuse::detail

// CopyWholeObject: a server-side copy of one object to another key, the first half of a rename
// (docs/semantics.md "Writes"). At or below `threshold` bytes it is one CopyObject; above it, a
// multipart upload whose parts are UploadPartCopy ranges of `part_size` bytes (grown so that the
// parts fit in S3's 10 000), `max_in_flight` at a time, each pinned to the source's ETag
// (x-amz-copy-source-if-match), then CompleteMultipartUpload. Any failure aborts the upload (best
// effort) and is the answer: no destination object is created, the source is untouched.
//
// Thread-safety: CopyWholeObject may be called from any thread; `done` runs exactly once, on the
// store's thread or the caller's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "s3/object_store.h"

namespace reelfs::fuse::detail {

struct CopyPlan {
  std::string bucket;
  std::string source_key;
  std::string dest_key;
  s3::ObjectInfo source;  // its HEAD: size, ETag, content type, user metadata
  uint64_t threshold = 5ull << 30;
  uint64_t part_size = 512ull << 20;
  uint32_t max_in_flight = 4;
};

// What the copy made: the destination's ETag, and how many parts (0: one CopyObject).
struct CopyOutcome {
  std::string etag;
  uint32_t parts = 0;
};

// The part size a copy of `size` bytes uses: `part_size`, doubled until 10 000 parts hold it.
uint64_t CopyPartSize(uint64_t size, uint64_t part_size);

void CopyWholeObject(std::shared_ptr<s3::ObjectStore> store, CopyPlan plan,
                     s3::Callback<CopyOutcome> done);

}  // namespace reelfs::fuse::detail

// ReadRanges: reads an object as ranged GETs of `part_size` bytes with up to `concurrency` in
// flight, each slot reusing one buffer, and hands every range to `consume` on the CALLING thread
// (never on the client's event loop, which must not block on disk or pipe writes).
//
// With `in_order`, ranges are consumed in offset order (for pipes); otherwise as they complete
// (for pwrite to a file). The ETag of the object pins it: a change mid-read fails with
// kFailedPrecondition. The first error stops new requests; the function returns once every
// request in flight has completed, so nothing refers to its locals afterwards.
//
// Thread-safety: one call per thread; `store` must be safe to call concurrently (ObjectStore is).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "s3/object_store.h"

namespace reelfs::cli {

struct RangedReadOptions {
  int concurrency = 8;
  uint64_t part_size = 8 << 20;
  bool in_order = false;
};

Status ReadRanges(
    s3::ObjectStore& store, const std::string& bucket, const std::string& key,
    const s3::ObjectInfo& info, const RangedReadOptions& options,
    const std::function<Status(uint64_t offset, std::span<const std::byte>)>& consume);

}  // namespace reelfs::cli

// The archive policy's decisions, as pure functions (unit-tested with a fake clock): which objects
// of an archive set are due for tape, how they are grouped into batches, and which cartridge a
// batch goes to (docs/gateway.md "Archive policy"). The engine (policy.h) does the I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "gateway/options.h"
#include "gateway/store/catalog.h"

namespace reelfs::gateway {

// True when `rec` belongs to `set` and is due: its key is under the set's prefix, it is not a
// directory marker or empty (nothing to write), it has no tape copy yet (a replaced object has
// none: new content drops the archive row), and it has not changed for `set.after` at `now_ns`.
bool DueForArchive(const ArchiveSet& set, const ObjectRecord& rec, int64_t now_ns);

// Groups due objects into batches in the set's order (key, or largest first then key). A batch
// ends before it would exceed batch_bytes or batch_objects; an object larger than batch_bytes is a
// batch of its own.
std::vector<std::vector<ObjectRecord>> MakeBatches(const ArchiveSet& set,
                                                   std::vector<ObjectRecord> due);

// Blocks a batch takes on tape (each object starts on a block boundary).
uint64_t BatchBlocks(const std::vector<ObjectRecord>& batch, uint64_t block_bytes);

// The first of the set's cartridges whose free space (capacity - next free block; a cartridge not
// in `next_block` is empty) holds `blocks`; ResourceExhausted naming the set when none does.
Result<std::string> PickCartridge(const ArchiveSet& set,
                                  const std::map<std::string, uint64_t>& next_block,
                                  uint64_t blocks, uint64_t capacity_blocks);

}  // namespace reelfs::gateway

#include "gateway/archive/policy_batches.h"

#include <algorithm>

#include "gateway/store/key_validation.h"

namespace reelfs::gateway {

bool DueForArchive(const ArchiveSet& set, const ObjectRecord& rec, int64_t now_ns) {
  if (!rec.key.starts_with(set.prefix)) return false;
  if (IsDirectoryMarker(rec.key) || rec.size == 0 || rec.archive.has_value()) return false;
  // A clock that went backwards (mtime in the future) makes nothing due early.
  return now_ns - rec.mtime_ns >= set.after.count();
}

std::vector<std::vector<ObjectRecord>> MakeBatches(const ArchiveSet& set,
                                                   std::vector<ObjectRecord> due) {
  if (set.order_by_size) {
    std::stable_sort(due.begin(), due.end(), [](const ObjectRecord& a, const ObjectRecord& b) {
      return a.size != b.size ? a.size > b.size : a.key < b.key;
    });
  } else {
    std::stable_sort(due.begin(), due.end(),
                     [](const ObjectRecord& a, const ObjectRecord& b) { return a.key < b.key; });
  }
  std::vector<std::vector<ObjectRecord>> batches;
  uint64_t bytes = 0;
  for (ObjectRecord& rec : due) {
    const bool full = !batches.empty() && (batches.back().size() >= set.batch_objects ||
                                           bytes + rec.size > set.batch_bytes);
    if (batches.empty() || full) {
      batches.emplace_back();
      bytes = 0;
    }
    bytes += rec.size;
    batches.back().push_back(std::move(rec));
  }
  return batches;
}

uint64_t BatchBlocks(const std::vector<ObjectRecord>& batch, uint64_t block_bytes) {
  uint64_t blocks = 0;
  for (const ObjectRecord& rec : batch) blocks += (rec.size + block_bytes - 1) / block_bytes;
  return blocks;
}

Result<std::string> PickCartridge(const ArchiveSet& set,
                                  const std::map<std::string, uint64_t>& next_block,
                                  uint64_t blocks, uint64_t capacity_blocks) {
  for (const std::string& vsn : set.cartridges) {
    auto it = next_block.find(vsn);
    const uint64_t used = it == next_block.end() ? 0 : it->second;
    if (used <= capacity_blocks && capacity_blocks - used >= blocks) return vsn;
  }
  return Status::ResourceExhausted("archive set '" + set.name + "': no cartridge has room for " +
                                   std::to_string(blocks) + " blocks");
}

}  // namespace reelfs::gateway

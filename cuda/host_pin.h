// PinnedHostRange: host memory page-locked for CUDA (cudaHostRegister), owned until destroyed.
//
// Pinned host memory is what cudaMemcpyAsync copies at full DMA speed, and the staging rung of
// the buffer ladder (gpu_ladder.h) lands RDMA in it before the copy to the GPU. Pinning has three
// known traps, each handled here:
//   * one cudaHostRegister of 512 GiB or more fails on current drivers, so a range is registered
//     in chunks of at most kMaxPinChunk (64 GiB);
//   * a range already registered (by the application, or by a library such as UCX) answers
//     cudaErrorHostMemoryAlreadyRegistered (712): it is pinned, so the chunk counts as pinned and
//     is not unregistered by us (its owner does that);
//   * a failed call leaves a sticky last error that a later, unrelated call would report, so every
//     failure is followed by cudaGetLastError; the chunks pinned before it are unpinned again.
// Pinning is cheaper on huge pages, so the range is advised MADV_HUGEPAGE first (a hint).
//
// Thread-safety: a PinnedHostRange is owned by one thread at a time; it may be moved and
// destroyed from any thread (CudaApi's contract).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "common/result.h"
#include "cuda/cuda_api.h"

namespace reelfs::cuda {

// The largest single cudaHostRegister: well below the 512 GiB at which drivers fail ("NVRM:
// failed to allocate page table"), and few enough calls for terabyte ranges.
inline constexpr size_t kMaxPinChunk = size_t{64} << 30;

struct PinOptions {
  size_t max_chunk = kMaxPinChunk;  // bytes per cudaHostRegister call; default 64 GiB
  unsigned flags = 0;               // cudaHostRegister flags; 0 = default (portable, mapped)
  bool advise_hugepages = true;     // madvise(MADV_HUGEPAGE) the range before pinning
};

struct PinChunk {
  size_t offset = 0;
  size_t length = 0;
  bool operator==(const PinChunk&) const = default;
};

// The chunks a range of `length` bytes is registered in: consecutive, each at most `max_chunk`
// (which must be non-zero), the last one shorter.
std::vector<PinChunk> PlanPinChunks(size_t length, size_t max_chunk);

class PinnedHostRange {
 public:
  // Pins `bytes` (non-empty; it must outlive the range) through `api` (which must outlive it).
  // kInvalidArgument for an empty range or a zero chunk size; otherwise the failing chunk's
  // CUDA error as a Status (cuda_status.h), with nothing left pinned by us.
  static Result<PinnedHostRange> Pin(CudaApi& api, std::span<std::byte> bytes,
                                     const PinOptions& options = {});

  PinnedHostRange(PinnedHostRange&& other) noexcept;
  PinnedHostRange& operator=(PinnedHostRange&& other) noexcept;
  PinnedHostRange(const PinnedHostRange&) = delete;
  PinnedHostRange& operator=(const PinnedHostRange&) = delete;
  ~PinnedHostRange();  // unregisters the chunks we registered; a failure is logged

  std::span<std::byte> bytes() const { return bytes_; }
  size_t chunks() const { return ours_.size() + already_registered_; }
  // Chunks that were pinned by someone else already (712), left to their owner.
  size_t already_registered_chunks() const { return already_registered_; }

 private:
  PinnedHostRange(CudaApi* api, std::span<std::byte> bytes) : api_(api), bytes_(bytes) {}
  void UnpinAll() noexcept;

  CudaApi* api_ = nullptr;
  std::span<std::byte> bytes_;
  std::vector<void*> ours_;  // chunk starts registered by us, in registration order
  size_t already_registered_ = 0;
};

}  // namespace reelfs::cuda

#include "cuda/host_pin.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <sys/mman.h>

#include "common/log.h"
#include "cuda/cuda_status.h"

namespace reelfs::cuda {
namespace {

// MADV_HUGEPAGE on the whole pages inside `bytes`. Only a hint: without transparent hugepages
// (or on memory that cannot take them) pinning is slower, not wrong.
void AdviseHugePages(std::span<std::byte> bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes.size()) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace

std::vector<PinChunk> PlanPinChunks(size_t length, size_t max_chunk) {
  std::vector<PinChunk> chunks;
  if (max_chunk == 0) return chunks;
  for (size_t offset = 0; offset < length; offset += max_chunk) {
    chunks.push_back({.offset = offset, .length = std::min(max_chunk, length - offset)});
  }
  return chunks;
}

Result<PinnedHostRange> PinnedHostRange::Pin(CudaApi& api, std::span<std::byte> bytes,
                                             const PinOptions& options) {
  if (bytes.empty() || options.max_chunk == 0) {
    return Status::InvalidArgument(
        fmt::format("cudaHostRegister: nothing to pin ({} bytes, chunks of {})", bytes.size(),
                    options.max_chunk));
  }
  if (options.advise_hugepages) AdviseHugePages(bytes);
  PinnedHostRange range(&api, bytes);
  for (const PinChunk& chunk : PlanPinChunks(bytes.size(), options.max_chunk)) {
    void* start = bytes.data() + chunk.offset;
    const int code = api.HostRegister(start, chunk.length, options.flags);
    if (code == cuda_error::kSuccess) {
      range.ours_.push_back(start);
      continue;
    }
    (void)api.GetLastError();  // clear the sticky error, whatever happens next
    if (code == cuda_error::kHostMemoryAlreadyRegistered) {
      ++range.already_registered_;  // pinned already; its owner unpins it
      continue;
    }
    // `range` unpins what was pinned before this chunk when it goes out of scope.
    return CudaToStatus(api, code,
                        fmt::format("cudaHostRegister({} bytes at offset {} of {})", chunk.length,
                                    chunk.offset, bytes.size()));
  }
  return range;
}

PinnedHostRange::PinnedHostRange(PinnedHostRange&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      bytes_(std::exchange(other.bytes_, {})),
      ours_(std::exchange(other.ours_, {})),
      already_registered_(std::exchange(other.already_registered_, 0)) {}

PinnedHostRange& PinnedHostRange::operator=(PinnedHostRange&& other) noexcept {
  if (this != &other) {
    UnpinAll();
    api_ = std::exchange(other.api_, nullptr);
    bytes_ = std::exchange(other.bytes_, {});
    ours_ = std::exchange(other.ours_, {});
    already_registered_ = std::exchange(other.already_registered_, 0);
  }
  return *this;
}

PinnedHostRange::~PinnedHostRange() { UnpinAll(); }

void PinnedHostRange::UnpinAll() noexcept {
  if (api_ == nullptr) return;
  // Reverse order of registration, like any teardown.
  for (auto it = ours_.rbegin(); it != ours_.rend(); ++it) {
    const int code = api_->HostUnregister(*it);
    if (code != cuda_error::kSuccess) {
      (void)api_->GetLastError();
      try {  // a destructor never throws: formatting the line could
        REELFS_LOG_WARN("cuda", "cudaHostUnregister({}): {} ({})", *it, api_->ErrorName(code),
                        code);
      } catch (...) {
      }
    }
  }
  ours_.clear();
  already_registered_ = 0;
}

}  // namespace reelfs::cuda

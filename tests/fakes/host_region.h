// A registered region that is plain host memory, for the unit tests of everything that moves
// bytes into registered windows (rdmaio's channels, the prefetcher): owned (a buffer of its own)
// or borrowed (a span the caller keeps alive). No device, no registration.
// Thread-safety: as RegisteredRegion; the bytes are the test's to synchronise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "rdmaio/channel/window_address.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::testing {

class FakeHostRegion final : public rdmaio::RegisteredRegion {
 public:
  explicit FakeHostRegion(size_t size) : owned_(size), bytes_(owned_) {}
  explicit FakeHostRegion(std::span<std::byte> bytes) : bytes_(bytes) {}

  rdmaio::MemoryKind kind() const override { return rdmaio::MemoryKind::kHost; }
  uint64_t length() const override { return bytes_.size(); }
  std::span<std::byte> host_bytes() const override { return bytes_; }

 private:
  std::vector<std::byte> owned_;  // empty when borrowed
  std::span<std::byte> bytes_;
};

// What a fake provider's Locate answers: the window's host address (a fake peer "RDMA-writes"
// there with memcpy) and a fixed rkey. A window into another kind of region, or past its end,
// is InvalidArgument, as the real providers refuse it.
inline Result<rdmaio::channel::WindowAddress> LocateFakeWindow(
    const rdmaio::RegisteredWindow& window) {
  if (dynamic_cast<const FakeHostRegion*>(window.region.get()) == nullptr ||
      window.offset + window.length > window.region->length()) {
    return Status::InvalidArgument("foreign region or window outside it");
  }
  return rdmaio::channel::WindowAddress{
      .addr = reinterpret_cast<uint64_t>(window.region->host_bytes().data()) + window.offset,
      .rkey = 0xabcd};
}

}  // namespace reelfs::testing

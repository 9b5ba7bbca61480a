// Gid: a 16-byte InfiniBand/RoCE global identifier, bytes in wire (network) order, as both
// token formats carry it.
//
// Thread-safety: a plain value.
#pragma once

#include <array>
#include <cstdint>

namespace reelfs::rdmaio::wire {

using Gid = std::array<uint8_t, 16>;

}  // namespace reelfs::rdmaio::wire

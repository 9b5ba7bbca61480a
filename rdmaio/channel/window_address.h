// WindowAddress: where a registered window is, as the peer names it in a token. Both providers'
// Locate (RcQpProvider, DcTargetProvider) answer with it.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>

namespace reelfs::rdmaio::channel {

struct WindowAddress {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

}  // namespace reelfs::rdmaio::channel

// Parsing of a HOST:PORT to listen on (the gateway's --listen, the mount's --metrics-listen) and
// the loopback guard.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs {

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};

// "127.0.0.1:7070", "[::1]:0", "localhost:80" (localhost becomes 127.0.0.1).
Result<ListenAddress> ParseListenAddress(std::string_view text);
// 127.0.0.0/8 and ::1.
bool IsLoopbackHost(std::string_view host);

}  // namespace reelfs

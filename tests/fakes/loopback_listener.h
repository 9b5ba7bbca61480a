// A TCP listener on 127.0.0.1 at a port the kernel picks: the socket under the scripted HTTP
// servers of the unit tests.
// Thread-safety: a plain function; the socket has one owner.
#pragma once

#include <cstdint>

#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"

namespace reelfs::testing {

// A listening socket (`backlog`) on 127.0.0.1 whose port goes to `*port`; invalid if any step
// failed.
inline UniqueFd ListenOnLoopback(int backlog, uint16_t* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd.get(), backlog) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return UniqueFd();
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace reelfs::testing

#include "common/listen_address.h"

#include <charconv>

#include <arpa/inet.h>

namespace reelfs {

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument("listen address must be HOST:PORT, got '" + std::string(text) +
                                   "'");
  }
  ListenAddress out;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  out.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || value > 65535 || port.empty()) {
    return Status::InvalidArgument("invalid port in listen address '" + std::string(text) + "'");
  }
  out.port = static_cast<uint16_t>(value);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, out.host.c_str(), &v4) != 1 &&
      inet_pton(AF_INET6, out.host.c_str(), &v6) != 1) {
    return Status::InvalidArgument("listen host must be an IP address, got '" + out.host + "'");
  }
  return out;
}

bool IsLoopbackHost(std::string_view host) {
  std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace reelfs

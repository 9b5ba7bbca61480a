// What the RDMA smoke binaries share (reelfs-rdma-smoke over host memory, reelfs-gpu-rdma-smoke
// over GPU memory): the window advertisement a client sends in its rdma_cm connect, the byte
// pattern written and checked, the ok/FAIL reporting (a failed step that later steps need ends the
// process with 1) and the port to test on. Test-only; single-threaded use of `Failures()`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "common/result.h"
#include "common/status.h"
#include "rdmaio/verbs/device.h"

namespace reelfs::rdma_smoke {

// The advertisement a client sends in its connect request (test-only layout; the real channel
// sends an RcToken over HTTP). rdma_cm allows 56 bytes of private data on a connect.
struct Advert {
  uint64_t addr;
  uint64_t length;
  uint32_t rkey;
  uint32_t pad;
};

// Changes every byte and every 4 KiB page differently, so a misplaced page or a shifted chunk is
// caught, not only a missing one.
inline uint8_t Pattern(size_t i) { return static_cast<uint8_t>((i * 131) ^ (i >> 12) ^ 0xa5); }

// Writes Pattern(base + i) into bytes[i].
inline void FillPattern(std::span<std::byte> bytes, size_t base = 0) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte{Pattern(base + i)};
}

// The first i where bytes[i] is not Pattern(base + i), or bytes.size() when none.
inline size_t FirstMismatch(std::span<const std::byte> bytes, size_t base = 0) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != std::byte{Pattern(base + i)}) return i;
  }
  return bytes.size();
}

inline int& Failures() {
  static int failures = 0;
  return failures;
}

inline void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++Failures();
}

template <class T>
T Need(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::printf("FAIL %s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

inline void Need(const Status& s, const char* what) {
  if (!s.ok()) {
    std::printf("FAIL %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

inline double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// The active RDMA port to test on (`device`, or the first active one) when there is one and an
// address `ip` of its netdev was given; otherwise prints "skip: ..." with the reason and returns
// nothing (the caller exits 77).
inline std::optional<rdmaio::verbs::DevicePort> PortToTest(const std::string& device,
                                                           const std::string& ip) {
  Result<rdmaio::verbs::DevicePort> port = rdmaio::verbs::FindActivePort(device);
  if (!port.ok()) {
    std::printf("skip: %s\n", port.status().ToString().c_str());
    return std::nullopt;
  }
  std::printf("device %s port %u\n", port->device.c_str(), port->port);
  if (ip.empty()) {
    std::printf("skip: an RDMA device exists, but no --ip ADDRESS of its netdev was given\n");
    return std::nullopt;
  }
  return *std::move(port);
}

}  // namespace reelfs::rdma_smoke

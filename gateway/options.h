// gateway::Options: everything reelfs-gateway can be told, with defaults. Filled from the YAML
// config (config_loader.h), then command-line flags, then environment (keys only).
//
// Thread-safety: a plain struct.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace reelfs::gateway {

struct Options {
  // Directory served: buckets are its top-level directories. Required.
  std::string root;
  // HOST:PORT to listen on; port 0 picks an ephemeral port.
  std::string listen = "127.0.0.1:7070";
  // A non-loopback listen address is refused unless this is set (reference gateway only).
  bool allow_non_loopback = false;
  // The one credential pair accepted. Empty: REELFS_GATEWAY_ACCESS_KEY/SECRET_KEY, else a random
  // pair written to ROOT/.reelfs-gateway/credentials (0600).
  std::string access_key;
  std::string secret_key;
  // SigV4 region.
  std::string region = "us-east-1";
  // io threads (connections are spread across them; handlers do blocking disk I/O).
  int threads = 4;
  // When set, the bound port number is written there (for tests using port 0).
  std::string port_file;
  // Log spec, e.g. "info" or "info,gateway.http=debug".
  std::string log_level = "info";
  // Connections idle (or stalled mid-request) this long are closed.
  std::chrono::seconds idle_timeout{60};
  // Virtual-host addressing: Host "<bucket>.<domain>". Empty: path style only.
  std::string virtual_host_domain;
  // Largest single PUT or part.
  uint64_t max_put_size = 5ull << 30;
  // Minimum size of every multipart part but the last (S3: 5 MiB).
  uint64_t min_part_size = 5ull << 20;
};

}  // namespace reelfs::gateway

// reelfs-gateway's command line, the only CLI11 code of the gateway: the flags as typed
// (CommandLine) and the Options they make with the YAML config file. For the server the config
// file comes first and flags given explicitly override it; `reelfs-gateway archive` takes its
// tape and archive sections from the file and --root from the flag.
//
// Thread-safety: called once from main.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "gateway/archive/archive.h"
#include "gateway/options.h"

namespace reelfs::gateway {

// --rdma and its companions, checked when the RDMA server is built (gateway/gateway_server.h).
struct RdmaFlags {
  bool enabled = false;  // --rdma given, with or without a device
  std::string device;    // "": the first active port
  std::string emulate = "none";
  std::string fault = "none";
  std::string fault_delay = "30s";
  std::string session_idle = "10m";
};

struct CommandLine {
  bool archive = false;             // `reelfs-gateway archive`
  bool check = false;               // `reelfs-gateway check`
  Options flags;                    // the values the flags set (only those in `given` count)
  std::set<std::string> given;      // the server's flags given explicitly, e.g. "--root"
  std::string config_file;          // --config
  std::string idle_timeout;         // --idle-timeout, a duration
  std::string multipart_expiry;     // --multipart-expiry, a duration (0: never)
  std::string max_connection_rate;  // --max-connection-rate, bytes per second (0: unlimited)
  ArchiveRunOptions run;            // `archive`'s flags
  std::string order = "key";        // `archive --order`: key or striped
  RdmaFlags rdma;
};

// Parses argv into `out`. The exit status when CLI11 is done with the process (--help: 0, a
// usage error: CLI11's code, its message printed); nullopt to go on.
std::optional<int> ParseCommandLine(int argc, char** argv, CommandLine& out);

// The server's Options: the config file, then the flags given; --root is required.
Result<Options> ServeOptions(const CommandLine& line);

// `reelfs-gateway archive`'s Options: the config file, and --root.
Result<Options> ArchiveCommandOptions(const CommandLine& line);

}  // namespace reelfs::gateway

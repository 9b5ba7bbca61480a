// The client's configuration file: named profiles of the command line's own options, so that a
// site writes its endpoint, TLS, RDMA, offline policy, memory and TTLs once
// (docs/configuration.md). YAML (yaml-cpp, as the gateway's config):
//
//   default_profile: archive          # optional; else the profile named "default", if any
//   profiles:
//     archive:
//       endpoint: http://gw:7070      # any global option, named without "--", '-' or '_'
//       aws_profile: tape             # the AWS profile credentials come from (--profile)
//       mount:                        # any `reelfs mount` option
//         offline: wait
//         max_memory: 4GiB
//
// Files are read in order (DefaultConfigFiles: /etc/reelfs/config.yaml, then the user's), a
// later file's keys replacing an earlier one's within a profile. This loader checks the shape
// (mappings, scalars, known top-level keys); which option names exist and what their values
// may be is checked against the command line itself (cli/main.cc), which names the line too.
// Secrets do not belong here: credentials come from the AWS environment and ~/.aws.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace reelfs::cli {

// One `key: value` of a profile, where it was written ("FILE:LINE") for error messages.
struct ConfigSetting {
  std::string key;    // as written, e.g. "max_memory"
  std::string value;  // the scalar's text; "true"/"false" for YAML booleans
  std::string origin;
};

struct ClientProfile {
  std::string name;
  std::vector<std::string> files;     // the files read, in order
  std::vector<ConfigSetting> global;  // the profile's top level
  std::vector<ConfigSetting> mount;   // its `mount:` section
};

// /etc/reelfs/config.yaml, then $XDG_CONFIG_HOME/reelfs/config.yaml (default ~/.config/...).
std::vector<std::string> DefaultConfigFiles();

// The profile `name` from `files` (a missing file is skipped unless `required_files`). Empty
// `name`: default_profile, else "default"; nullopt when there is none (no file, or no profile
// of that name and none was asked for). A profile asked for by name and found nowhere, or any
// mistake in a file, is kInvalidArgument naming the file and line.
Result<std::optional<ClientProfile>> LoadClientProfile(const std::vector<std::string>& files,
                                                       std::string_view name, bool required_files);

// One file's text, for tests: as LoadClientProfile over a single file named `origin`.
Result<std::optional<ClientProfile>> ParseClientProfile(std::string_view yaml,
                                                        std::string_view origin,
                                                        std::string_view name);

}  // namespace reelfs::cli

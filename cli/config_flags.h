// ProfileFlags: a config profile (cli/client_config.h) turned into the command line's own flags,
// so that a profile can set exactly what a flag can, checked by the same parser. Each key names
// a flag without its dashes (`max_memory` is `--max-memory`; `aws_profile` is `--profile`, the
// AWS profile credentials come from). A key whose flag, or a flag that excludes it, was given on
// the command line is skipped: flags override the profile. Mistakes name the file and line: a
// key that is no flag, a flag's value that is not true/false, an integer option's value that is
// not an integer.
//
// Thread-safety: reads the parsed `app`; call from main only.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client_config.h"
#include "common/result.h"

namespace reelfs::cli {

// The flags to append to the command line and parse again. `mount_cmd` is `reelfs mount`: its
// section's keys are always checked, and turned into flags only when `mount_selected`.
Result<std::vector<std::string>> ProfileFlags(const ClientProfile& profile, const CLI::App& app,
                                              const CLI::App& mount_cmd, bool mount_selected);

// What `reelfs config` prints: the files read, the profile, and each setting with its origin
// and whether the command line overrides it.
std::string DescribeProfile(const ClientProfile& profile, const CLI::App& app,
                            const CLI::App& mount_cmd);

}  // namespace reelfs::cli

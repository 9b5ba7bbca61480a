// The `reelfs` subcommands that work on s3:// URLs (ls, cp, cat, stat): they give scripts and the
// demo a way to use the client library directly. The mount and the tape commands have headers of
// their own (mount_command.h, tape_commands.h).
//
// Each returns a process exit status after printing its own errors to stderr.
// Thread-safety: called once from main.
#pragma once

#include <cstdint>
#include <string>

#include "s3/object_store.h"

namespace reelfs::cli {

struct LsArgs {
  std::string url;
  bool recursive = false;
};
int RunLs(s3::ObjectStore& store, const LsArgs& args);

struct CpArgs {
  std::string url;
  std::string dest;     // a file path, or "-" for stdout
  int concurrency = 8;  // ranged GETs in flight
  uint64_t part_size = 8 << 20;
};
int RunCp(s3::ObjectStore& store, const CpArgs& args);

int RunStat(s3::ObjectStore& store, const std::string& url);

}  // namespace reelfs::cli

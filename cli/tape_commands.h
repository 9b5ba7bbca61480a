// `reelfs stage`, `reelfs status` and `reelfs wait` (docs/tape.md): bulk staging with progress,
// per-object state, and waiting for objects to come online. PATHs are files or directories under a
// reelfs mount (mapped to endpoint, bucket and key through the mount root's user.reelfs.mount
// xattr) or s3://BUCKET/KEY URLs (a trailing '/' or -r makes a prefix).
//
// Exit codes (documented in docs/tape.md, tested): 0 done (everything requested is submitted, or
// with --wait / `wait`, readable); 1 permanent failure of some object (refused, StageFail, came
// back offline max-attempts times, offline and never requested for `wait`); 2 usage or setup
// error (bad flag, path not under a mount, unreachable server); 75 (EX_TEMPFAIL) timed out with
// partial progress.
//
// Thread-safety: Register and Run are called once, from main.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/tape_options.h"
#include "common/result.h"
#include "s3/object_store.h"

namespace reelfs::cli {

inline constexpr int kExitDone = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimedOut = 75;

// Builds the S3 client for `endpoint` ("" = the --endpoint / AWS environment default). A path
// under a mount uses the endpoint the mount publishes unless --endpoint was given.
using EndpointStoreFactory =
    std::function<Result<std::unique_ptr<s3::ObjectStore>>(const std::string& endpoint)>;

class TapeCommands {
 public:
  // Adds the stage, status and wait subcommands and their flags to `app`.
  void Register(CLI::App& app);
  // Whether one of them was selected on the command line (after parsing).
  bool Selected() const;
  // Runs the selected command; returns the exit code. `global_endpoint` is --endpoint ("" if
  // not given).
  int Run(const EndpointStoreFactory& make_store, const std::string& global_endpoint);

 private:
  CLI::App* stage_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* wait_ = nullptr;
  TapeFlags args_;  // parsed and checked by ParseTapeFlags (cli/tape_options.h)
};

}  // namespace reelfs::cli

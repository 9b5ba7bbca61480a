// `reelfs stage`, `status` and `wait` flags as typed (TapeFlags) and what they mean (TapeConfig):
// durations, tier, days and rate checked, the paths gathered from the command line and
// --from-file. Apart from CLI11 and from any S3 request, so it is unit-tested
// (tests/unit/cli/tape_options_test.cc); cli/tape_commands.cc runs the result.
//
// Thread-safety: pure functions (ParseTapeFlags reads the --from-file list, or the stream given
// for "-").
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "hsm/stager.h"

namespace reelfs::cli {

enum class TapeCommand : uint8_t { kStage, kStatus, kWait };

// "stage", "status", "wait": how the command names itself in its messages.
std::string_view TapeCommandName(TapeCommand command);

// The flags of the three commands as CLI11 fills them (a command ignores those it lacks).
struct TapeFlags {
  std::vector<std::string> paths;
  bool recursive = false;
  std::string from_file;  // --from-file LIST|- : one path per line
  bool wait = false;      // stage --wait
  std::string timeout;    // "" = no limit
  std::string tier = "standard";
  int days = 7;
  bool json = false;
  bool dry_run = false;
  bool force = false;  // stage: also objects the mount's local cache holds whole
  std::string ledger;  // "" = the mount's, else hsm::Ledger::DefaultPath()
  std::string poll = "1s";
  std::string poll_max = "60s";
  double rate = 200;  // RestoreObject requests per second
};

struct TapeConfig {
  TapeCommand command = TapeCommand::kStatus;
  bool wait = false;  // `wait`, or `stage --wait`: until every object is readable
  // --timeout, counted from the start of the command (submission included); none: no limit.
  std::optional<Clock::Duration> timeout;
  // Tier, days, rate and polls; `batch` is left to the command (it names the run).
  hsm::StageOptions stage;
  std::vector<std::string> paths;  // as given, then --from-file's; never empty
  bool recursive = false;
  bool json = false;
  bool dry_run = false;
  // stage: request restores of objects the mount's local cache (--cache) holds whole too; without
  // it they are left out (readable on this host already, docs/cache.md "Tape").
  bool force = false;
  std::string ledger;
};

// Checks the flags in a fixed order (--timeout, --poll, --poll-max, --tier, --days, --rate,
// --from-file, then that some PATH is given) and fails with kInvalidArgument on the first bad
// one, the message being what the command prints after "reelfs NAME: ". `--from-file -` reads
// `standard_input`.
Result<TapeConfig> ParseTapeFlags(TapeCommand command, const TapeFlags& flags,
                                  std::istream& standard_input);

// One path per line; trailing '\r' and spaces dropped, blank lines skipped.
std::vector<std::string> ReadPathList(std::istream& list);

}  // namespace reelfs::cli

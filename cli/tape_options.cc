#include "cli/tape_options.h"

#include <fstream>

#include "common/units.h"

namespace reelfs::cli {
namespace {

// A restored copy kept longer than a century is a typo.
constexpr int kMaxDays = 36500;

Result<s3::RestoreTier> ParseTier(std::string_view tier) {
  if (tier == "standard") return s3::RestoreTier::kStandard;
  if (tier == "bulk") return s3::RestoreTier::kBulk;
  if (tier == "expedited") return s3::RestoreTier::kExpedited;
  return Status::InvalidArgument("--tier: expected standard, bulk or expedited");
}

// Tier, days, rate and polls, checked in that order after --poll and --poll-max.
Status ParseStageOptions(const TapeFlags& flags, hsm::StageOptions& options) {
  auto poll = ParseDuration(flags.poll);
  if (!poll.ok() || poll->count() <= 0) {
    return Status::InvalidArgument("--poll: expected a positive duration");
  }
  auto poll_max = ParseDuration(flags.poll_max);
  if (!poll_max.ok() || *poll_max < *poll) {
    return Status::InvalidArgument("--poll-max: expected a duration >= --poll");
  }
  REELFS_ASSIGN_OR_RETURN(options.params.tier, ParseTier(flags.tier));
  if (flags.days < 1 || flags.days > kMaxDays) {
    return Status::InvalidArgument("--days: expected 1..36500");
  }
  if (!(flags.rate > 0)) return Status::InvalidArgument("--rate: expected a positive number");
  options.params.days = flags.days;
  options.max_requests_per_second = flags.rate;
  options.poll_min = *poll;
  options.poll_max = *poll_max;
  return Status::Ok();
}

// The positional paths, then --from-file's.
Result<std::vector<std::string>> CollectPaths(const TapeFlags& flags,
                                              std::istream& standard_input) {
  std::vector<std::string> paths = flags.paths;
  if (!flags.from_file.empty()) {
    std::ifstream file;
    std::istream* in = &standard_input;
    if (flags.from_file != "-") {
      file.open(flags.from_file);
      if (!file) return Status::InvalidArgument("--from-file: cannot read " + flags.from_file);
      in = &file;
    }
    for (std::string& path : ReadPathList(*in)) paths.push_back(std::move(path));
  }
  if (paths.empty()) return Status::InvalidArgument("no PATH given");
  return paths;
}

}  // namespace

std::string_view TapeCommandName(TapeCommand command) {
  switch (command) {
    case TapeCommand::kStage:
      return "stage";
    case TapeCommand::kStatus:
      return "status";
    case TapeCommand::kWait:
      return "wait";
  }
  return "status";
}

std::vector<std::string> ReadPathList(std::istream& list) {
  std::vector<std::string> paths;
  for (std::string line; std::getline(list, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) paths.push_back(line);
  }
  return paths;
}

Result<TapeConfig> ParseTapeFlags(TapeCommand command, const TapeFlags& flags,
                                  std::istream& standard_input) {
  TapeConfig c;
  c.command = command;
  c.wait = command == TapeCommand::kWait || (command == TapeCommand::kStage && flags.wait);
  if (!flags.timeout.empty()) {
    auto t = ParseDuration(flags.timeout);
    if (!t.ok()) return Status::InvalidArgument("--timeout: " + std::string(t.status().message()));
    c.timeout = *t;
  }
  REELFS_RETURN_IF_ERROR(ParseStageOptions(flags, c.stage));
  REELFS_ASSIGN_OR_RETURN(c.paths, CollectPaths(flags, standard_input));
  c.recursive = flags.recursive;
  c.json = flags.json;
  c.dry_run = flags.dry_run;
  c.force = flags.force;
  c.ledger = flags.ledger;
  return c;
}

}  // namespace reelfs::cli

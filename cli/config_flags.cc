#include "cli/config_flags.h"

#include <charconv>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace reelfs::cli {
namespace {

// The keys a profile may not set: they choose the profile, or do nothing useful from a file.
bool Reserved(std::string_view key) {
  return key == "config" || key == "config_profile" || key == "help" || key == "version" ||
         key == "profile";
}

std::string FlagName(std::string_view key) {
  if (key == "aws_profile") return "--profile";
  std::string flag = "--" + std::string(key);
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

std::optional<bool> ParseBool(std::string_view v) {
  if (v == "true" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

bool IsInteger(std::string_view v) {
  int64_t out = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data() + (!v.empty() && v[0] == '+' ? 1 : 0), end, out);
  return ec == std::errc() && p == end && !v.empty();
}

// The flag for one setting in `cmd`, or an error naming its line; nullopt: nothing to add
// (a false flag). `where` says which section, for the message.
Result<std::optional<std::string>> Flag(const ConfigSetting& s, const CLI::App& cmd,
                                        std::string_view where) {
  if (Reserved(s.key)) {
    return Status::InvalidArgument(fmt::format(
        "{}: '{}' cannot be set in a profile{}", s.origin, s.key,
        s.key == "profile" ? " (the AWS profile credentials come from is aws_profile)" : ""));
  }
  const std::string flag = FlagName(s.key);
  const CLI::Option* opt = cmd.get_option_no_throw(flag);
  if (opt == nullptr || opt->get_positional()) {
    return Status::InvalidArgument(
        fmt::format("{}: unknown key '{}' in {} (`reelfs {}--help` lists the options)", s.origin,
                    s.key, where, where == "mount:" ? "mount " : ""));
  }
  if (opt->get_expected_max() == 0) {  // a flag: it takes no separate value
    const std::optional<bool> on = ParseBool(s.value);
    if (on) return *on ? std::optional<std::string>(flag) : std::nullopt;
    // `--rdma` also takes a device name, written --rdma=DEV.
    if (flag == "--rdma") return std::optional<std::string>(flag + "=" + s.value);
    return Status::InvalidArgument(
        fmt::format("{}: {} must be true or false, not '{}'", s.origin, s.key, s.value));
  }
  const std::string type = opt->get_type_name();
  if ((type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) && !IsInteger(s.value)) {
    return Status::InvalidArgument(
        fmt::format("{}: {} must be an integer, not '{}'", s.origin, s.key, s.value));
  }
  return std::optional<std::string>(flag + "=" + s.value);
}

// The setting's flag, or one that excludes it (`--splice-reads` against a profile's
// `no_splice_reads`), was given: the command line decides.
bool GivenOnCommandLine(const ConfigSetting& s, const CLI::App& cmd) {
  const CLI::Option* opt = cmd.get_option_no_throw(FlagName(s.key));
  if (opt == nullptr) return false;
  if (opt->count() > 0) return true;
  for (const CLI::Option* other : opt->get_excludes()) {
    if (other->count() > 0) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<std::string>> ProfileFlags(const ClientProfile& profile, const CLI::App& app,
                                              const CLI::App& mount_cmd, bool mount_selected) {
  std::vector<std::string> flags;
  for (const ConfigSetting& s : profile.global) {
    REELFS_ASSIGN_OR_RETURN(std::optional<std::string> flag, Flag(s, app, "the profile"));
    if (flag && !GivenOnCommandLine(s, app)) flags.push_back(*flag);
  }
  for (const ConfigSetting& s : profile.mount) {
    REELFS_ASSIGN_OR_RETURN(std::optional<std::string> flag, Flag(s, mount_cmd, "mount:"));
    if (flag && mount_selected && !GivenOnCommandLine(s, mount_cmd)) flags.push_back(*flag);
  }
  return flags;
}

std::string DescribeProfile(const ClientProfile& profile, const CLI::App& app,
                            const CLI::App& mount_cmd) {
  std::string out =
      fmt::format("profile: {}\nfiles: {}\n", profile.name, fmt::join(profile.files, ", "));
  auto line = [&out](const ConfigSetting& s, bool overridden, std::string_view indent) {
    out += fmt::format("{}{}: {}  # {}{}\n", indent, s.key, s.value, s.origin,
                       overridden ? ", overridden by the command line" : "");
  };
  for (const ConfigSetting& s : profile.global) line(s, GivenOnCommandLine(s, app), "");
  if (!profile.mount.empty()) out += "mount:\n";
  for (const ConfigSetting& s : profile.mount) line(s, GivenOnCommandLine(s, mount_cmd), "  ");
  return out;
}

}  // namespace reelfs::cli

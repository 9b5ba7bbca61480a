#include "cli/fstab_options.h"

#include <algorithm>
#include <array>
#include <utility>

namespace reelfs::cli {
namespace {

// Options for mount(8), fstab or the kernel that a FUSE daemon does not take: a FUSE mount is
// nodev and nosuid whatever is asked, and the rest describe when and how to mount.
bool IgnoredOption(std::string_view name) {
  static constexpr std::array<std::string_view, 17> kIgnored = {
      "rw",       "dev",  "nodev",  "suid", "nosuid", "exec",   "noexec",   "atime",  "noatime",
      "relatime", "auto", "noauto", "user", "users",  "nouser", "defaults", "_netdev"};
  if (name == "nofail" || name.starts_with("x-") || name.starts_with("comment=")) return true;
  return std::find(kIgnored.begin(), kIgnored.end(), name) != kIgnored.end();
}

}  // namespace

std::vector<std::string> MountOptionFlags(std::string_view list) {
  std::vector<std::string> flags;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.empty() || IgnoredOption(item)) continue;
    if (item == "ro") {
      flags.emplace_back("--read-only");
      continue;
    }
    const size_t eq = item.find('=');
    std::string name(item.substr(0, eq));
    std::replace(name.begin(), name.end(), '_', '-');
    flags.push_back("--" + name);
    if (eq != std::string_view::npos) flags.emplace_back(item.substr(eq + 1));
  }
  return flags;
}

std::vector<std::string> RewriteMountHelperArgs(
    std::vector<std::string> args, const std::function<bool(std::string_view)>& is_command) {
  if (args.size() >= 2 && !args[0].empty() && args[0][0] != '-' && !is_command(args[0])) {
    args.insert(args.begin(), "mount");  // the mount helper's "SOURCE MOUNTPOINT -o ..."
  }
  if (args.empty() || args[0] != "mount") return args;
  std::vector<std::string> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string_view list;
    if (a == "-o" && i + 1 < args.size()) {
      list = args[++i];
    } else if (a.size() > 2 && a.starts_with("-o")) {
      list = std::string_view(a).substr(2);
    } else {
      out.push_back(a);
      continue;
    }
    for (std::string& flag : MountOptionFlags(list)) out.push_back(std::move(flag));
  }
  return out;
}

}  // namespace reelfs::cli

// `reelfs` as a mount helper: /etc/fstab and mount(8) hand a FUSE file system's program
// "SOURCE MOUNTPOINT -o OPT[,OPT...]" (mount.fuse3, for type `fuse.reelfs` or a source
// `reelfs#SOURCE` of type `fuse`). This turns such a command line, and any `-o` list given to
// `reelfs mount`, into the ordinary `reelfs mount` flags, so there is one parser and one set of
// names (docs/semantics.md "Mount options", "/etc/fstab").
//
// The rules, per option: `ro` -> --read-only; `rw` and the kernel-level flags mount(8) adds or
// fstab carries for itself (dev, suid, exec, atime, noatime, relatime, auto, noauto, user, users,
// nouser, defaults, _netdev, nofail, x-*) -> nothing; `key=value` -> --key value and `key` ->
// --key, with '_' in the key read as '-' (offline_timeout=5m is --offline-timeout 5m). Unknown
// names are left for the mount's own parser to refuse.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace reelfs::cli {

// One -o list ("ro,allow_other,endpoint=http://gw:7070") as flags.
std::vector<std::string> MountOptionFlags(std::string_view list);

// `args` (argv without the program name) rewritten: "SOURCE MOUNTPOINT [-o LIST]..." (when
// `is_command(args[0])` is false and args[0] is not an option) becomes "mount SOURCE MOUNTPOINT
// FLAGS..."; every "-o LIST" / "-oLIST" after "mount" becomes its flags. Anything else is
// returned as it was.
std::vector<std::string> RewriteMountHelperArgs(
    std::vector<std::string> args, const std::function<bool(std::string_view)>& is_command);

}  // namespace reelfs::cli

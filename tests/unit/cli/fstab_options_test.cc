// The mount helper's command line (cli/fstab_options.h): what mount(8) hands `reelfs` for an
// /etc/fstab line, as the flags `reelfs mount` parses.
#include "cli/fstab_options.h"

#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::cli {
namespace {

using Args = std::vector<std::string>;

bool IsCommand(std::string_view name) { return name == "mount" || name == "ls" || name == "cp"; }

TEST_CASE("fstab options: ro, key=value, bare keys, and what mount(8) adds is dropped") {
  // Exactly what mount.fuse3 passed for "_netdev,allow_other,endpoint=...,offline=wait,ro,noauto,
  // nofail,x-systemd.automount" on this machine.
  CHECK(MountOptionFlags("ro,allow_other,endpoint=http://127.0.0.1:7070,offline=wait,dev,suid") ==
        Args{"--read-only", "--allow-other", "--endpoint", "http://127.0.0.1:7070", "--offline",
             "wait"});
  CHECK(MountOptionFlags("rw,_netdev,nofail,x-systemd.automount,defaults,noatime") == Args{});
  CHECK(MountOptionFlags("offline_timeout=5m,allow_delete,uid=1000,,max-memory=2GiB") ==
        Args{"--offline-timeout", "5m", "--allow-delete", "--uid", "1000", "--max-memory", "2GiB"});
  // A value keeps its own '=' and '_'.
  CHECK(MountOptionFlags("ledger=/var/lib/a_b=c.sqlite") ==
        Args{"--ledger", "/var/lib/a_b=c.sqlite"});
}

TEST_CASE("fstab options: the helper's SOURCE MOUNTPOINT -o LIST becomes reelfs mount") {
  CHECK(RewriteMountHelperArgs({"bucket/prefix", "/mnt/a", "-o", "ro,endpoint=http://gw:7070"},
                               IsCommand) ==
        Args{"mount", "bucket/prefix", "/mnt/a", "--read-only", "--endpoint", "http://gw:7070"});
  // -o after `reelfs mount`, joined or apart, more than once.
  CHECK(
      RewriteMountHelperArgs({"mount", "b", "/m", "-oro", "-o", "allow_other", "-f"}, IsCommand) ==
      Args{"mount", "b", "/m", "--read-only", "--allow-other", "-f"});
  // Other commands and options are left alone (cp's -o would be no mount option).
  CHECK(RewriteMountHelperArgs({"cp", "s3://b/k", "-o"}, IsCommand) ==
        Args{"cp", "s3://b/k", "-o"});
  CHECK(RewriteMountHelperArgs({"--version"}, IsCommand) == Args{"--version"});
  CHECK(RewriteMountHelperArgs({"ls", "s3://b/"}, IsCommand) == Args{"ls", "s3://b/"});
}

}  // namespace
}  // namespace reelfs::cli

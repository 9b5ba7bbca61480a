// `reelfs mount BUCKET[/PREFIX] MOUNTPOINT`: checks that the bucket answers, then mounts it
// read-only with fuse/lowlevel and serves it until unmounted (fusermount3 -u) or signalled
// (SIGINT/SIGTERM). Without --foreground it daemonizes after the check: the parent exits 0 once
// the child has mounted, or prints the child's error and exits 1. The objects of the mount and
// their teardown order: cli/mount_stack.h.
//
// Thread-safety: called once from main, before any other thread exists.
#pragma once

#include "cli/mount_options.h"
#include "cli/mount_stack.h"

namespace reelfs::cli {

// Returns the process exit status: 0 mounted and cleanly unmounted (or daemon started),
// 1 mount failed, 2 bad flags. `make_clients` builds the S3 client (cli/mount_stack.h).
int RunMount(const MountFlags& flags, const ClientFactory& make_clients);

}  // namespace reelfs::cli

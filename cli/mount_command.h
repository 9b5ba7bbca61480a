// `reelfs mount BUCKET[/PREFIX] MOUNTPOINT`: checks that the bucket answers, then mounts it
// read-only with fuse/lowlevel and serves it until unmounted (fusermount3 -u) or signalled
// (SIGINT/SIGTERM). Without --foreground it daemonizes after the check: the parent exits 0 once
// the child has mounted, or prints the child's error and exits 1.
//
// Thread-safety: called once from main, before any other thread exists.
#pragma once

#include <functional>
#include <memory>

#include "cli/mount_options.h"
#include "common/result.h"
#include "s3/object_store.h"

namespace reelfs::cli {

// Builds the S3 client (called once to check the bucket, and again in the daemon after fork,
// since a client's event-loop thread does not survive fork).
using StoreFactory = std::function<Result<std::unique_ptr<s3::ObjectStore>>()>;

// Returns the process exit status: 0 mounted and cleanly unmounted (or daemon started),
// 1 mount failed, 2 bad flags.
int RunMount(const MountFlags& flags, const StoreFactory& make_store);

}  // namespace reelfs::cli

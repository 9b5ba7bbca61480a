// The device number (st_dev) of a mount, from /proc/self/mountinfo: the side channel checks an
// OPEN_FILE fd against it. Read from mountinfo, not stat(2), because the daemon asks before its
// own FUSE loop runs, and a stat of its own mountpoint would wait for that loop.
//
// Thread-safety: pure functions, except MountDevice (reads /proc).
#pragma once

#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace reelfs::api {

// The device of the last mount at `mountpoint` in a mountinfo text (mounts stack: the last one
// is the visible one). Mount points in mountinfo escape space, tab, newline and backslash as
// octal (\040); kNotFound when none matches, kInvalidArgument for a malformed matching line.
Result<dev_t> ParseMountDevice(std::string_view mountinfo, std::string_view mountpoint);

Result<dev_t> MountDevice(std::string_view mountpoint);

}  // namespace reelfs::api

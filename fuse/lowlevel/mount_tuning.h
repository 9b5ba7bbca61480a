// Mount-time tuning outside the FUSE protocol: the kernel readahead window of the mount's
// backing device info (BDI). Before Linux 7.3 the server's max_readahead can only lower the
// window (default 128 KiB), so buffered sequential reads stay at 128 KiB requests unless root
// raises /sys/class/bdi/<major:minor>/read_ahead_kb (gpu-fuse-datapath.md §1).
//
// The device is found in /proc/self/mountinfo, not with stat(mountpoint): a stat right after
// fuse_session_mount() would wait for a GETATTR that no loop thread is serving yet.
//
// Thread-safety: pure functions plus file writes; call once per mount.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::fuse {

// The "major:minor" of the mount at `mountpoint` (absolute, as mounted) in mountinfo text
// (proc(5) format; octal escapes such as \040 in mount points are decoded). The last matching
// line wins, as with stacked mounts.
Result<std::string> FindMountDevice(std::string_view mountinfo, std::string_view mountpoint);

// "/sys/class/bdi/<device>/read_ahead_kb" under `sysfs_root` (normally "/sys").
std::string ReadAheadPath(std::string_view device, std::string_view sysfs_root = "/sys");

// Writes `kb` to the mount's read_ahead_kb. Needs root; callers log a failure at WARN.
Status SetMountReadAheadKb(const std::string& mountpoint, uint32_t kb);

}  // namespace reelfs::fuse

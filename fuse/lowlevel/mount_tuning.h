// Mount-time tuning outside the FUSE protocol: the kernel readahead window of the mount's backing
// device info (BDI). Before Linux 7.3 the server's max_readahead can only lower the window (default
// 128 KiB), so buffered sequential reads stay at 128 KiB requests unless root raises
// /sys/class/bdi/<major:minor>/read_ahead_kb (docs/semantics.md "Mount options").
//
// The device is found in /proc/self/mountinfo, not with stat(mountpoint): a stat right after
// fuse_session_mount() would wait for a GETATTR that no loop thread is serving yet.
//
// Also the kernel's FUSE request timeout (Linux 6.14+, fs.fuse.*_request_timeout): a request
// unanswered that long aborts the whole connection, so a read waiting for a restore must answer
// before it (docs/semantics.md "Offline objects").
//
// The same device number serves the side channel (api/server), which checks that an fd a client
// passes is on this mount.
//
// Thread-safety: pure functions plus file reads and writes; call once per mount.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace reelfs::fuse {

// The "major:minor" of the mount at `mountpoint` (absolute, as mounted) in mountinfo text
// (proc(5) format; octal escapes such as \040 in mount points are decoded). The last matching
// line wins, as with stacked mounts.
Result<std::string> FindMountDevice(std::string_view mountinfo, std::string_view mountpoint);

// "major:minor" as a dev_t; kInvalidArgument for anything else.
Result<dev_t> ParseDeviceNumber(std::string_view major_minor);

// st_dev of the mount at `mountpoint`, from /proc/self/mountinfo.
Result<dev_t> MountDeviceNumber(std::string_view mountpoint);

// "/sys/class/bdi/<device>/read_ahead_kb" under `sysfs_root` (normally "/sys").
std::string ReadAheadPath(std::string_view device, std::string_view sysfs_root = "/sys");

// Writes `kb` to the mount's read_ahead_kb. Needs root; callers log a failure at WARN.
Status SetMountReadAheadKb(const std::string& mountpoint, uint32_t kb);

// The request timeout the kernel gives a new FUSE connection: the smallest non-zero of
// fs/fuse/default_request_timeout and max_request_timeout under `proc_root`/sys (what
// fs/fuse/inode.c applies when the server asks for none); nullopt when both are 0 or absent.
std::optional<std::chrono::seconds> KernelRequestTimeout(std::string_view proc_root = "/proc");

// The most pages the kernel lets one FUSE request carry (fs/fuse/max_pages_limit under
// `proc_root`/sys, Linux 6.13+; 256 before, fixed): a direct read into a buffer that is not
// page-aligned needs one page more than its size. nullopt where the file is absent or unreadable.
std::optional<uint32_t> KernelMaxPagesLimit(std::string_view proc_root = "/proc");

// `wait` kept below `kernel_timeout` with a margin (a tenth, at least 1 s) for the reply itself;
// unchanged when there is no kernel timeout or `wait` is already below the capped value.
std::chrono::seconds CapBelowRequestTimeout(std::chrono::seconds wait,
                                            std::optional<std::chrono::seconds> kernel_timeout);

}  // namespace reelfs::fuse

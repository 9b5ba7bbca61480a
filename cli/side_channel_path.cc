#include "cli/side_channel_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/status.h"

namespace reelfs::cli {
namespace {

// sizeof(sockaddr_un::sun_path) less the terminating NUL.
constexpr size_t kMaxSocketPath = 107;

// FNV-1a, 64 bits: stable across builds and runs (std::hash is not), enough to tell
// mountpoints apart in a file name.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::string> ResolveSideChannelPath(std::string_view flag, std::string_view mountpoint,
                                           uid_t euid, const char* xdg_runtime_dir) {
  std::string path;
  if (flag == "off") return std::string();
  if (flag == "auto") {
    std::string base;
    if (euid == 0) {
      base = "/run/reelfs";
    } else if (xdg_runtime_dir != nullptr && xdg_runtime_dir[0] == '/') {
      base = std::string(xdg_runtime_dir) + "/reelfs";
    } else {
      base = fmt::format("/tmp/reelfs-{}", euid);
    }
    path = fmt::format("{}/{:016x}.sock", base, Fnv1a(mountpoint));
  } else {
    if (flag.empty() || flag.front() != '/') {
      return Status::InvalidArgument("--side-channel: auto, off or an absolute socket path");
    }
    if (flag.back() == '/') {
      return Status::InvalidArgument("--side-channel: " + std::string(flag) + " names a directory");
    }
    path = std::string(flag);
  }
  if (path.size() > kMaxSocketPath) {
    return Status::InvalidArgument(fmt::format(
        "--side-channel: socket path {} is longer than {} bytes (sockaddr_un); give a shorter "
        "one",
        path, kMaxSocketPath));
  }
  return path;
}

Status PrepareSocketDirectory(const std::string& socket_path, bool allow_other) {
  const std::string dir = DirectoryOf(socket_path);
  const mode_t mode = allow_other ? 0755 : 0700;
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, "side channel directory " + dir);
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return ErrnoToStatus(errno, "side channel directory " + dir);
  // An explicit --side-channel path may sit in any directory the user owns or root's; the
  // checks below are for the directory the socket lives in, whoever made it.
  if (!S_ISDIR(st.st_mode)) {
    return Status::FailedPrecondition("side channel directory " + dir + " is not a directory");
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return Status::FailedPrecondition(fmt::format(
        "side channel directory {} belongs to uid {}, not to the mounting user", dir, st.st_uid));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Status::FailedPrecondition("side channel directory " + dir +
                                      " is writable by others (and not sticky)");
  }
  return Status::Ok();
}

}  // namespace reelfs::cli

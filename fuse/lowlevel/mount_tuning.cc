#include "fuse/lowlevel/mount_tuning.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <sys/sysmacros.h>

namespace reelfs::fuse {
namespace {

// proc(5): mount points escape space, tab, newline and backslash as \ooo.
std::string DecodeOctalEscapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    if (end > pos) fields.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return fields;
}

Result<std::string> ReadMountInfo() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return ErrnoToStatus(errno, "open /proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<std::string> FindMountDevice(std::string_view mountinfo, std::string_view mountpoint) {
  std::string found;
  size_t pos = 0;
  while (pos < mountinfo.size()) {
    size_t end = mountinfo.find('\n', pos);
    if (end == std::string_view::npos) end = mountinfo.size();
    const auto fields = SplitFields(mountinfo.substr(pos, end - pos));
    pos = end + 1;
    // id parent major:minor root mountpoint ...
    if (fields.size() >= 5 && DecodeOctalEscapes(fields[4]) == mountpoint) {
      found = std::string(fields[2]);
    }
  }
  if (found.empty()) {
    return Status::NotFound(fmt::format("no mount at {} in mountinfo", mountpoint));
  }
  return found;
}

Result<dev_t> ParseDeviceNumber(std::string_view major_minor) {
  const size_t colon = major_minor.find(':');
  unsigned major = 0;
  unsigned minor = 0;
  const char* end = major_minor.data() + major_minor.size();
  if (colon == std::string_view::npos || colon == 0 ||
      std::from_chars(major_minor.data(), major_minor.data() + colon, major).ptr !=
          major_minor.data() + colon ||
      colon + 1 == major_minor.size() ||
      std::from_chars(major_minor.data() + colon + 1, end, minor).ptr != end) {
    return Status::InvalidArgument(fmt::format("bad device number '{}'", major_minor));
  }
  return makedev(major, minor);
}

Result<dev_t> MountDeviceNumber(std::string_view mountpoint) {
  REELFS_ASSIGN_OR_RETURN(std::string text, ReadMountInfo());
  REELFS_ASSIGN_OR_RETURN(std::string device, FindMountDevice(text, mountpoint));
  return ParseDeviceNumber(device);
}

std::string ReadAheadPath(std::string_view device, std::string_view sysfs_root) {
  return fmt::format("{}/class/bdi/{}/read_ahead_kb", sysfs_root, device);
}

Status SetMountReadAheadKb(const std::string& mountpoint, uint32_t kb) {
  REELFS_ASSIGN_OR_RETURN(std::string text, ReadMountInfo());
  REELFS_ASSIGN_OR_RETURN(std::string device, FindMountDevice(text, mountpoint));
  const std::string path = ReadAheadPath(device);
  std::ofstream out(path);
  if (!out) return ErrnoToStatus(errno, "open " + path);
  out << kb << "\n";
  out.flush();
  if (!out) return ErrnoToStatus(errno, "write " + path);
  return Status::Ok();
}

namespace {

std::optional<uint64_t> ReadUnsigned(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::chrono::seconds> KernelRequestTimeout(std::string_view proc_root) {
  const std::string dir = std::string(proc_root) + "/sys/fs/fuse/";
  std::optional<uint64_t> best;
  for (const char* name : {"default_request_timeout", "max_request_timeout"}) {
    std::optional<uint64_t> v = ReadUnsigned(dir + name);
    if (v && *v > 0 && (!best || *v < *best)) best = v;
  }
  if (!best) return std::nullopt;
  return std::chrono::seconds(*best);
}

std::optional<uint32_t> KernelMaxPagesLimit(std::string_view proc_root) {
  std::optional<uint64_t> v = ReadUnsigned(std::string(proc_root) + "/sys/fs/fuse/max_pages_limit");
  if (!v || *v == 0 || *v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::chrono::seconds CapBelowRequestTimeout(std::chrono::seconds wait,
                                            std::optional<std::chrono::seconds> kernel_timeout) {
  if (!kernel_timeout) return wait;
  const std::chrono::seconds margin = std::max(std::chrono::seconds(1), *kernel_timeout / 10);
  const std::chrono::seconds cap = std::max(std::chrono::seconds(1), *kernel_timeout - margin);
  return std::min(wait, cap);
}

}  // namespace reelfs::fuse

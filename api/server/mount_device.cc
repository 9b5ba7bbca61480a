#include "api/server/mount_device.h"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/sysmacros.h>

#include "common/status.h"

namespace reelfs::api {
namespace {

// mountinfo's octal escapes (\040 for a space) undone.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && s.size() - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '3' &&
        s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

}  // namespace

Result<dev_t> ParseMountDevice(std::string_view mountinfo, std::string_view mountpoint) {
  std::optional<dev_t> found;
  while (!mountinfo.empty()) {
    const size_t nl = mountinfo.find('\n');
    const std::string_view line = mountinfo.substr(0, nl);
    mountinfo = nl == std::string_view::npos ? std::string_view() : mountinfo.substr(nl + 1);
    // id parent major:minor root mountpoint ...
    const std::vector<std::string_view> f = Fields(line);
    if (f.size() < 5 || Unescape(f[4]) != mountpoint) continue;
    const std::string_view dev = f[2];
    const size_t colon = dev.find(':');
    unsigned major = 0, minor = 0;
    if (colon == std::string_view::npos ||
        std::from_chars(dev.data(), dev.data() + colon, major).ec != std::errc() ||
        std::from_chars(dev.data() + colon + 1, dev.data() + dev.size(), minor).ec != std::errc()) {
      return Status::InvalidArgument("mountinfo: bad device '" + std::string(dev) + "'");
    }
    found = makedev(major, minor);
  }
  if (!found) return Status::NotFound("mountinfo: nothing mounted at " + std::string(mountpoint));
  return *found;
}

Result<dev_t> MountDevice(std::string_view mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return ErrnoToStatus(errno, "/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  return ParseMountDevice(text.str(), mountpoint);
}

}  // namespace reelfs::api

#include "fuse/core/process_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace reelfs::fuse::detail {

uint32_t ProcessOf(uint32_t tid) {
  if (tid == 0) return 0;
  const std::string path = "/proc/" + std::to_string(tid) + "/status";
  auto fd = UniqueFd::Open(path, O_RDONLY | O_CLOEXEC);
  if (!fd.ok()) return tid;
  char buf[2048];  // Tgid is the fourth line, well inside the first 2 KiB
  ssize_t n = ::read(fd->get(), buf, sizeof buf);
  if (n <= 0) return tid;
  std::string_view s(buf, static_cast<size_t>(n));
  constexpr std::string_view kTag = "\nTgid:";
  size_t at = s.find(kTag);
  if (at == std::string_view::npos) return tid;
  at += kTag.size();
  while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
  uint32_t tgid = 0;
  auto [end, ec] = std::from_chars(s.data() + at, s.data() + s.size(), tgid);
  return ec == std::errc() && tgid != 0 ? tgid : tid;
}

}  // namespace reelfs::fuse::detail

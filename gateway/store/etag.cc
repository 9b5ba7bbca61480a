#include "gateway/store/etag.h"

#include <unistd.h>

#include <cerrno>

#include "common/strings.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {

Result<std::string> Md5HexOfFd(int fd) {
  s3::Digest md5(s3::Digest::Algorithm::kMd5);
  std::string buf(1 << 20, '\0');
  off_t off = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read for md5");
    if (n == 0) break;
    md5.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
    off += n;
  }
  return s3::HexEncode(md5.Finish());
}

Result<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return Status::InvalidArgument("odd-length hex");
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nib(hex[i]);
    int lo = nib(hex[i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("non-hex character");
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

Result<std::string> MultipartEtag(const std::vector<std::string>& part_md5_hex) {
  std::string concat;
  for (const std::string& hex : part_md5_hex) {
    REELFS_ASSIGN_OR_RETURN(std::string raw, HexDecode(Unquote(hex)));
    if (raw.size() != 16) return Status::InvalidArgument("part ETag is not an MD5: " + hex);
    concat += raw;
  }
  return s3::Md5Hex(concat) + "-" + std::to_string(part_md5_hex.size());
}

}  // namespace reelfs::gateway

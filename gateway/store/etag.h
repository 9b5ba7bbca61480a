// ETags as S3 computes them: hex MD5 of the content for single PUTs; for multipart uploads the
// hex MD5 of the concatenated binary part MD5s, then "-<number of parts>".
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace reelfs::gateway {

// Hex MD5 of everything readable from fd (read with pread from offset 0).
Result<std::string> Md5HexOfFd(int fd);

// part_md5_hex: each part's ETag without quotes. kInvalidArgument for a malformed hex digest.
Result<std::string> MultipartEtag(const std::vector<std::string>& part_md5_hex);

// Hex (either case) to bytes; nullopt-like error for odd length or non-hex characters.
Result<std::string> HexDecode(std::string_view hex);

}  // namespace reelfs::gateway

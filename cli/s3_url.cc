#include "cli/s3_url.h"

#include <string>

namespace reelfs::cli {

Result<S3Url> ParseS3Url(std::string_view text) {
  constexpr std::string_view kScheme = "s3://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not an s3://bucket/key URL");
  }
  std::string_view rest = text.substr(kScheme.size());
  size_t slash = rest.find('/');
  S3Url url;
  url.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) url.key = std::string(rest.substr(slash + 1));
  if (url.bucket.empty()) {
    return Status::InvalidArgument("'" + std::string(text) + "' names no bucket");
  }
  return url;
}

}  // namespace reelfs::cli

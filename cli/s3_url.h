// S3Url: "s3://bucket/key" as the reelfs command line takes it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::cli {

struct S3Url {
  std::string bucket;
  std::string key;  // may be empty (whole bucket) or a prefix
};

// Accepts "s3://bucket", "s3://bucket/", "s3://bucket/a/b". Anything else is kInvalidArgument.
Result<S3Url> ParseS3Url(std::string_view text);

}  // namespace reelfs::cli

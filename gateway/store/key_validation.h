// Validation of bucket names and object keys before they become paths under the root.
//
// The gateway maps `bucket/key` to `ROOT/bucket/key`, so every key is checked here first: no
// '.' or '..' components, no empty components (except the trailing '/' of a directory marker),
// no NUL or other control characters, valid UTF-8, at most 1024 bytes and 255 bytes a component,
// never the reserved internal directory. Path resolution (fs_root.h) adds O_NOFOLLOW on top.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace reelfs::gateway {

inline constexpr std::string_view kReservedDir = ".reelfs-gateway";
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxComponentBytes = 255;

// S3 bucket naming rules (3-63 chars, lowercase letters, digits, '.', '-', begins and ends with a
// letter or digit, no "..", not an IPv4 address). Error detail().s3_code: InvalidBucketName.
Status ValidateBucketName(std::string_view name);

// Error detail().s3_code: KeyTooLongError or InvalidArgument.
Status ValidateObjectKey(std::string_view key);

// Whether the key names a directory marker ("a/b/").
inline bool IsDirectoryMarker(std::string_view key) { return !key.empty() && key.back() == '/'; }

// Splits a validated key into its path components ("a/b/" -> {"a","b"}).
std::vector<std::string> SplitKey(std::string_view key);

// Whether `id` has the form the gateway issues for multipart uploads (32 lowercase hex digits).
// Upload ids become directory names under the reserved dir, so anything else ("../../x", "a/b",
// "") is refused before it reaches a path.
bool IsValidUploadId(std::string_view id);

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace reelfs::gateway

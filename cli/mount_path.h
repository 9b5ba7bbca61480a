// Where a `reelfs stage/status/wait` PATH lives in S3: an s3://BUCKET/KEY URL, or a file or
// directory under a reelfs mount. A mount publishes what it serves on its root directory in the
// extended attribute user.reelfs.mount, a JSON object (docs/tape.md):
//
//   {"version":1,"endpoint":"http://127.0.0.1:7070","bucket":"b","prefix":"p/",
//    "ledger":"/root/.local/state/reelfs/ledger.sqlite"}
//
// The mount root is found by walking up from the path while st_dev stays the same (a FUSE mount
// is one device); the key is prefix + the path relative to the root, and a directory is the
// prefix target key + "/".
//
// Thread-safety: pure functions, except ResolvePath (reads the file system).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::cli {

inline constexpr const char* kMountXattr = "user.reelfs.mount";

// The value of user.reelfs.mount.
struct MountInfo {
  int version = 1;
  std::string endpoint;  // S3 endpoint URL the mount uses ("" = the SDK default)
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  std::string ledger;  // restore ledger file of the mount ("" = none published)
  std::string cache;   // the mount's --cache directory ("" = none)
};

// Parses the xattr's JSON (a flat object; unknown scalar members are ignored, so later versions
// may add some). InvalidArgument for malformed JSON, a nested member, a version other than the
// number 1, an endpoint, bucket, prefix or ledger that is not a string, no bucket, or a prefix
// that is neither empty nor ends in '/'.
Result<MountInfo> ParseMountInfo(std::string_view json);

struct ResolvedPath {
  std::string endpoint;  // from the mount ("" for s3:// URLs: the caller's default)
  std::string bucket;
  std::string key;         // object key, or prefix ("" or ending in '/') when is_prefix
  bool is_prefix = false;  // a directory, an s3:// URL ending in '/' or given with -r
  std::string ledger;      // the mount's ledger ("" = not known: the default one)
  std::string cache;       // the mount's local cache directory ("" = none)
  bool under_mount = false;
};

// An s3:// URL: a key, or a prefix when it is empty (the bucket), ends in '/', or `recursive`
// (then "/" is appended to a key that lacks it: s3://b/dir -r is everything under dir/).
Result<ResolvedPath> ResolveS3Url(std::string_view url, bool recursive);

// The mount root of `real_path` (absolute, already resolved): its topmost ancestor (or itself)
// whose device is the same. `device_of` returns a path's st_dev, or nullopt if it cannot stat.
std::string FindMountRoot(
    const std::string& real_path,
    const std::function<std::optional<uint64_t>(const std::string&)>& device_of);

// The S3 location of `relative` (a path below the mount root, "" for the root itself, no leading
// '/') under `mount`; a directory gives the prefix target.
ResolvedPath KeyUnderMount(const MountInfo& mount, std::string_view relative, bool is_directory);

// s3:// URLs through ResolveS3Url; anything else through realpath, FindMountRoot and the root's
// user.reelfs.mount. FailedPrecondition "not under a reelfs mount" when the xattr is missing;
// NotFound / errno errors from realpath and stat.
Result<ResolvedPath> ResolvePath(const std::string& path, bool recursive);

}  // namespace reelfs::cli

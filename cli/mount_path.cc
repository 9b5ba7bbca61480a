#include "cli/mount_path.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>

#include <sys/stat.h>
#include <sys/xattr.h>

#include "cli/s3_url.h"
#include "common/json.h"

namespace reelfs::cli {
namespace {

Result<std::string> GetXattr(const std::string& path, const char* name) {
  std::string value(4096, '\0');
  for (int tries = 0; tries < 3; ++tries) {
    ssize_t n = ::getxattr(path.c_str(), name, value.data(), value.size());
    if (n >= 0) {
      value.resize(static_cast<size_t>(n));
      return value;
    }
    int err = errno;
    if (err != ERANGE) return ErrnoToStatus(err, "getxattr " + path + " " + name);
    ssize_t need = ::getxattr(path.c_str(), name, nullptr, 0);
    if (need < 0) return ErrnoToStatus(errno, "getxattr " + path + " " + name);
    value.resize(static_cast<size_t>(need));
  }
  return Status::Unavailable("getxattr " + path + ": value keeps growing");
}

}  // namespace

Result<MountInfo> ParseMountInfo(std::string_view json) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::parse_error& e) {
    return Status::InvalidArgument(std::string("user.reelfs.mount: ") + e.what());
  }
  if (!doc.is_object()) return Status::InvalidArgument("user.reelfs.mount: not a JSON object");
  for (const auto& [name, value] : doc.items()) {
    // The contract has no nested values; a reader must not guess what a later one means.
    if (value.is_structured()) {
      return Status::InvalidArgument("user.reelfs.mount: member " + name + " is not a scalar");
    }
  }
  auto version = doc.find("version");
  if (version == doc.end()) return Status::InvalidArgument("user.reelfs.mount: no version");
  if (!version->is_number_integer() || version->get<int64_t>() != 1) {
    return Status::InvalidArgument("user.reelfs.mount: version " + DumpJson(*version) +
                                   " is not supported (this reelfs reads version 1)");
  }
  MountInfo info;
  auto str = [&](const char* name, std::string* out) -> Status {
    auto it = doc.find(name);
    if (it == doc.end()) return Status::Ok();
    if (!it->is_string()) {
      return Status::InvalidArgument(std::string("user.reelfs.mount: ") + name +
                                     " is not a string");
    }
    *out = it->get<std::string>();
    return Status::Ok();
  };
  REELFS_RETURN_IF_ERROR(str("endpoint", &info.endpoint));
  REELFS_RETURN_IF_ERROR(str("bucket", &info.bucket));
  REELFS_RETURN_IF_ERROR(str("prefix", &info.prefix));
  REELFS_RETURN_IF_ERROR(str("ledger", &info.ledger));
  REELFS_RETURN_IF_ERROR(str("cache", &info.cache));
  if (info.bucket.empty()) return Status::InvalidArgument("user.reelfs.mount: no bucket");
  if (!info.prefix.empty() && info.prefix.back() != '/') {
    return Status::InvalidArgument("user.reelfs.mount: prefix '" + info.prefix +
                                   "' does not end in '/'");
  }
  return info;
}

Result<ResolvedPath> ResolveS3Url(std::string_view url, bool recursive) {
  REELFS_ASSIGN_OR_RETURN(S3Url parsed, ParseS3Url(url));
  ResolvedPath out;
  out.bucket = parsed.bucket;
  out.key = parsed.key;
  out.is_prefix = out.key.empty() || out.key.back() == '/' || recursive;
  if (out.is_prefix && !out.key.empty() && out.key.back() != '/') out.key += '/';
  return out;
}

std::string FindMountRoot(
    const std::string& real_path,
    const std::function<std::optional<uint64_t>(const std::string&)>& device_of) {
  std::optional<uint64_t> dev = device_of(real_path);
  std::string root = real_path;
  if (!dev) return root;
  while (root != "/") {
    size_t slash = root.find_last_of('/');
    std::string parent = slash == 0 ? "/" : root.substr(0, slash);
    if (device_of(parent) != dev) break;
    root = parent;
  }
  return root;
}

ResolvedPath KeyUnderMount(const MountInfo& mount, std::string_view relative, bool is_directory) {
  ResolvedPath out;
  out.endpoint = mount.endpoint;
  out.bucket = mount.bucket;
  out.ledger = mount.ledger;
  out.cache = mount.cache;
  out.under_mount = true;
  out.key = mount.prefix + std::string(relative);
  out.is_prefix = is_directory;
  if (is_directory && !out.key.empty() && out.key.back() != '/') out.key += '/';
  return out;
}

Result<ResolvedPath> ResolvePath(const std::string& path, bool recursive) {
  if (path.rfind("s3://", 0) == 0) return ResolveS3Url(path, recursive);
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) return ErrnoToStatus(errno, path);
  const std::string real_path(real.get());
  struct stat st {};
  if (::stat(real_path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat " + real_path);
  const std::string root = FindMountRoot(real_path, [](const std::string& p) {
    struct stat s {};
    if (::stat(p.c_str(), &s) != 0) return std::optional<uint64_t>();
    return std::optional<uint64_t>(static_cast<uint64_t>(s.st_dev));
  });
  auto value = GetXattr(root, kMountXattr);
  if (!value.ok()) {
    return Status::FailedPrecondition(path + ": not under a reelfs mount (" + root + " has no " +
                                      kMountXattr + ": " + std::string(value.status().message()) +
                                      "); use an s3://BUCKET/KEY URL instead");
  }
  auto info = ParseMountInfo(*value);
  if (!info.ok()) return info.status().WithContext(root);
  std::string relative = real_path.size() > root.size() ? real_path.substr(root.size() + 1) : "";
  if (root == "/") relative = real_path.substr(1);
  return KeyUnderMount(*info, relative, S_ISDIR(st.st_mode));
}

}  // namespace reelfs::cli

#include "cli/local_sources.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/c_handle.h"

namespace reelfs::cli {
namespace {

using DirHandle = CHandle<DIR, ::closedir>;

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string_view KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

class Walker {
 public:
  Walker(const LocalSourceOptions& options, LocalSourceList* out) : options_(options), out_(out) {}

  // Walks directory `path` (whose stat is `st`), naming its entries `key_prefix` + name.
  void Walk(const std::string& path, const struct stat& st, const std::string& key_prefix) {
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    if (!walking_.insert(id).second) {
      out_->problems.push_back(fmt::format(
          "{}: a symbolic link back to a directory being copied (a cycle), not followed", path));
      return;
    }
    DirHandle dir(::opendir(path.c_str()));
    if (dir == nullptr) {
      out_->problems.push_back(
          fmt::format("{}: cannot read the directory: {}", path, std::strerror(errno)));
      walking_.erase(id);
      return;
    }
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(dir.get())) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
      errno = 0;
    }
    if (errno != 0) {
      out_->problems.push_back(
          fmt::format("{}: reading the directory failed: {}", path, std::strerror(errno)));
    }
    dir.reset();  // one open directory per level at most, however deep the tree
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      Entry(path + "/" + name, key_prefix + name);
    }
    walking_.erase(id);
  }

  // One entry at `path`, to be uploaded as `key` (a directory: as the prefix key + "/").
  void Entry(const std::string& path, const std::string& key) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      out_->problems.push_back(fmt::format("{}: {}", path, std::strerror(errno)));
      return;
    }
    if (S_ISLNK(st.st_mode)) {
      if (!options_.follow_symlinks) {
        out_->notes.push_back(
            fmt::format("{}: a symbolic link, skipped (--no-follow-symlinks)", path));
        return;
      }
      if (::stat(path.c_str(), &st) != 0) {
        out_->problems.push_back(fmt::format("{}: a broken symbolic link ({}), not uploaded", path,
                                             std::strerror(errno)));
        return;
      }
    }
    if (!IsValidUtf8(key)) {
      out_->problems.push_back(fmt::format(
          "{}: the name is not valid UTF-8, which an S3 key must be; not uploaded", path));
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      Walk(path, st, key + "/");
    } else if (S_ISREG(st.st_mode)) {
      out_->sources.push_back(
          {.path = path, .key = key, .size = static_cast<uint64_t>(st.st_size)});
    } else {
      out_->problems.push_back(
          fmt::format("{}: {}, which S3 cannot hold; not uploaded", path, KindOf(st.st_mode)));
    }
  }

 private:
  const LocalSourceOptions& options_;
  LocalSourceList* out_;
  std::set<std::pair<dev_t, ino_t>> walking_;  // the directories on the current path
};

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinOf[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOf[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Result<LocalSourceList> ListLocalSources(const std::string& source, const std::string& key,
                                         const LocalSourceOptions& options) {
  LocalSourceList out;
  const bool to_prefix = key.empty() || key.back() == '/';
  if (source == "-") {
    if (options.recursive) return Status::InvalidArgument("-r: '-' (stdin) is not a directory");
    if (to_prefix) {
      return Status::InvalidArgument(
          "'-' (stdin) has no file name: the destination must name the object (s3://bucket/key)");
    }
    out.sources.push_back({.path = "-", .key = key, .size = 0, .size_known = false});
    return out;
  }
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) return ErrnoToStatus(errno, source);
  if (S_ISDIR(st.st_mode)) {
    if (!options.recursive) {
      return Status::InvalidArgument(source + " is a directory (use -r to copy a tree)");
    }
    const std::string prefix = key.empty() || key.back() == '/' ? key : key + "/";
    Walker(options, &out).Walk(source, st, prefix);
    return out;
  }
  if (options.recursive) {
    return Status::InvalidArgument("-r: " + source + " is not a directory");
  }
  if (!S_ISREG(st.st_mode)) {
    // A FIFO or character device named on the command line is read as a stream, as stdin is.
    out.sources.push_back({.path = source,
                           .key = to_prefix ? key + BaseName(source) : key,
                           .size = 0,
                           .size_known = false});
    return out;
  }
  out.sources.push_back({.path = source,
                         .key = to_prefix ? key + BaseName(source) : key,
                         .size = static_cast<uint64_t>(st.st_size)});
  return out;
}

}  // namespace reelfs::cli

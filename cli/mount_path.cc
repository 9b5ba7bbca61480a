#include "cli/mount_path.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <variant>

#include <sys/stat.h>
#include <sys/xattr.h>

#include "cli/s3_url.h"

namespace reelfs::cli {
namespace {

// A reader for the one JSON shape we accept: a flat object whose values are strings, numbers,
// booleans or null (nested values are rejected: the contract has none). Strings take the JSON
// escapes, \uXXXX included (encoded as UTF-8; surrogate pairs combined).
class FlatJsonReader {
 public:
  explicit FlatJsonReader(std::string_view text) : text_(text) {}

  Result<std::map<std::string, std::string>> ReadObject() {
    std::map<std::string, std::string> out;
    SkipSpace();
    if (!Eat('{')) return Error("expected '{'");
    SkipSpace();
    if (Eat('}')) return Finish(std::move(out));
    for (;;) {
      SkipSpace();
      REELFS_ASSIGN_OR_RETURN(std::string name, ReadString());
      SkipSpace();
      if (!Eat(':')) return Error("expected ':'");
      SkipSpace();
      REELFS_ASSIGN_OR_RETURN(std::string value, ReadScalar());
      out[name] = std::move(value);
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) return Finish(std::move(out));
      return Error("expected ',' or '}'");
    }
  }

 private:
  Result<std::map<std::string, std::string>> Finish(std::map<std::string, std::string> out) {
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters");
    return out;
  }
  Status Error(std::string_view what) const {
    return Status::InvalidArgument("JSON at offset " + std::to_string(pos_) + ": " +
                                   std::string(what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Result<std::string> ReadScalar() {
    if (pos_ >= text_.size()) return Error("value expected");
    char c = text_[pos_];
    if (c == '"') return ReadString();
    if (c == '{' || c == '[') return Error("nested values are not expected");
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ' ' &&
           text_[pos_] != '\n' && text_[pos_] != '\t' && text_[pos_] != '\r') {
      ++pos_;
    }
    std::string word(text_.substr(start, pos_ - start));
    if (word == "true" || word == "false" || word == "null") return word;
    if (word.empty()) return Error("value expected");
    char* end = nullptr;
    std::strtod(word.c_str(), &end);
    if (end != word.c_str() + word.size()) return Error("bad number '" + word + "'");
    return word;
  }
  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  Result<uint32_t> ReadHex4() {
    if (pos_ + 4 > text_.size()) return Error("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= h - '0';
      else if (h >= 'a' && h <= 'f')
        v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        v |= h - 'A' + 10;
      else
        return Error("bad \\u escape");
    }
    return v;
  }
  Result<std::string> ReadString() {
    if (!Eat('"')) return Error("expected a string");
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          REELFS_ASSIGN_OR_RETURN(uint32_t cp, ReadHex4());
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!Eat('\\') || !Eat('u')) return Error("lone surrogate");
            REELFS_ASSIGN_OR_RETURN(uint32_t low, ReadHex4());
            if (low < 0xDC00 || low >= 0xE000) return Error("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return Error("lone surrogate");
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return Error(std::string("bad escape \\") + e);
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

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
  REELFS_ASSIGN_OR_RETURN(auto fields, FlatJsonReader(json).ReadObject());
  MountInfo info;
  auto str = [&](const char* name, std::string* out) -> Status {
    auto it = fields.find(name);
    if (it == fields.end()) return Status::Ok();
    *out = it->second;
    return Status::Ok();
  };
  auto version = fields.find("version");
  if (version == fields.end()) return Status::InvalidArgument("user.reelfs.mount: no version");
  if (version->second != "1") {
    return Status::InvalidArgument("user.reelfs.mount: version " + version->second +
                                   " is not supported (this reelfs reads version 1)");
  }
  REELFS_RETURN_IF_ERROR(str("endpoint", &info.endpoint));
  REELFS_RETURN_IF_ERROR(str("bucket", &info.bucket));
  REELFS_RETURN_IF_ERROR(str("prefix", &info.prefix));
  REELFS_RETURN_IF_ERROR(str("ledger", &info.ledger));
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

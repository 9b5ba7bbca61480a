#include "gateway/store/key_validation.h"

#include <cstdint>

namespace reelfs::gateway {
namespace {

Status KeyError(std::string_view s3_code, std::string message) {
  StatusDetail detail;
  detail.s3_code = std::string(s3_code);
  detail.http_status = 400;
  return Status(StatusCode::kInvalidArgument, std::move(message), std::move(detail));
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool LooksLikeIpv4(std::string_view name) {
  int dots = 0;
  for (char c : name) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

Status ValidateBucketName(std::string_view name) {
  auto bad = [&](std::string why) {
    StatusDetail detail;
    detail.s3_code = "InvalidBucketName";
    detail.http_status = 400;
    return Status(StatusCode::kInvalidArgument, "invalid bucket name: " + why, std::move(detail));
  };
  if (name.size() < 3 || name.size() > 63) return bad("length must be 3..63");
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) {
    return bad("must begin and end with a lowercase letter or digit");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!IsLowerAlnum(c) && c != '.' && c != '-') return bad("only a-z, 0-9, '.', '-' allowed");
    if (c == '.' && i + 1 < name.size() && (name[i + 1] == '.' || name[i + 1] == '-')) {
      return bad("no '..' or '.-'");
    }
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '.') return bad("no '-.'");
  }
  if (LooksLikeIpv4(name)) return bad("must not look like an IP address");
  return Status::Ok();
}

Status ValidateObjectKey(std::string_view key) {
  if (key.empty()) return KeyError("InvalidArgument", "empty key");
  if (key.size() > kMaxKeyBytes) {
    return KeyError("KeyTooLongError", "key longer than 1024 bytes");
  }
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      return KeyError("InvalidArgument", "control character in key");
    }
  }
  if (!IsValidUtf8(key)) return KeyError("InvalidArgument", "key is not valid UTF-8");
  if (key.front() == '/') return KeyError("InvalidArgument", "key begins with '/'");
  std::string_view rest = key;
  if (IsDirectoryMarker(rest)) rest.remove_suffix(1);
  bool first = true;
  while (true) {
    size_t slash = rest.find('/');
    std::string_view comp = rest.substr(0, slash);
    if (comp.empty()) return KeyError("InvalidArgument", "empty path component in key");
    if (comp == "." || comp == "..") {
      return KeyError("InvalidArgument", "'.' or '..' path component in key");
    }
    if (comp.size() > kMaxComponentBytes) {
      return KeyError("KeyTooLongError", "path component longer than 255 bytes");
    }
    if (first && comp == kReservedDir) {
      return KeyError("InvalidArgument", "key uses the reserved gateway directory");
    }
    first = false;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return Status::Ok();
}

bool IsValidUploadId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::vector<std::string> SplitKey(std::string_view key) {
  std::vector<std::string> out;
  if (IsDirectoryMarker(key)) key.remove_suffix(1);
  while (!key.empty()) {
    size_t slash = key.find('/');
    out.emplace_back(key.substr(0, slash));
    if (slash == std::string_view::npos) break;
    key.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace reelfs::gateway

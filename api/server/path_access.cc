#include "api/server/path_access.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/status.h"

namespace reelfs::api {

Result<PeerCredentials> ReadPeerCredentials(int socket) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return ErrnoToStatus(errno, "SO_PEERCRED");
  }
  PeerCredentials peer{.pid = cred.pid, .uid = cred.uid, .gid = cred.gid, .groups = {}};
  // SO_PEERGROUPS (Linux 4.13): ERANGE with the size needed when the buffer is too small.
  std::vector<gid_t> groups(64);
  for (int tries = 0; tries < 4; ++tries) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(socket, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      peer.groups = std::move(groups);
      return peer;
    }
    if (errno != ERANGE) return ErrnoToStatus(errno, "SO_PEERGROUPS");
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  return Status::Internal("SO_PEERGROUPS: the group list kept growing");
}

Result<std::vector<std::string>> SplitMountPath(std::string_view path) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("path '{}': {}", path.substr(0, 200), why));
  };
  if (path.empty()) return bad("empty");
  if (path.front() == '/') return bad("must be relative to the mount root");
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(start, slash - start);
    if (part.empty()) return bad("empty component");
    if (part == "." || part == "..") return bad("'.' and '..' components are refused");
    if (part.size() > 255) return bad("a component is longer than 255 bytes");
    if (part.find('\0') != std::string_view::npos) return bad("NUL byte");
    parts.emplace_back(part);
    start = slash + 1;
  }
  return parts;
}

bool MayUseMount(const PeerCredentials& peer, bool allow_other, uid_t owner_uid, gid_t owner_gid) {
  return allow_other || (peer.uid == owner_uid && peer.gid == owner_gid);
}

bool MayAccess(const PeerCredentials& peer, const fuse::Attributes& attr, int want) {
  if (peer.uid == 0) {
    // CAP_DAC_OVERRIDE: read and write anything, search any directory; execute a file only if
    // some execute bit is set.
    if ((want & X_OK) == 0 || attr.is_dir) return true;
    return (attr.mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
  }
  int shift = 0;  // others
  if (peer.uid == attr.uid) {
    shift = 6;
  } else if (peer.gid == attr.gid ||
             std::find(peer.groups.begin(), peer.groups.end(), attr.gid) != peer.groups.end()) {
    shift = 3;
  }
  const int bits = static_cast<int>((attr.mode >> shift) & 7);
  return (bits & want) == want;
}

}  // namespace reelfs::api

// OPEN_PATH's checks (docs/protocols/side-channel.md section 3): the path's syntax, the peer's
// credentials from its socket, and the permission test the kernel's default_permissions applies
// at every step of a path through the mount, so that a client that names a file gets exactly
// the access an open(2) through the mount would have given it.
//
// Thread-safety: pure functions, except ReadPeerCredentials (one getsockopt pair).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "fuse/core/types.h"

namespace reelfs::api {

// SO_PEERCRED's uid and gid (effective, at connect) and SO_PEERGROUPS' supplementary groups.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

Result<PeerCredentials> ReadPeerCredentials(int socket);

// The components of a path below the mount root: relative, no empty, "." or ".." component, each
// at most 255 bytes (NAME_MAX). kInvalidArgument naming the rule otherwise.
Result<std::vector<std::string>> SplitMountPath(std::string_view path);

// Whether `peer` may use the mount at all: FUSE lets only the mounting user (`owner_uid`,
// `owner_gid`) in unless the mount has allow_other; root is no exception.
bool MayUseMount(const PeerCredentials& peer, bool allow_other, uid_t owner_uid, gid_t owner_gid);

// generic_permission for one inode: root may read anything and search any directory; otherwise
// the owner's, the group's (primary or supplementary) or the others' bits decide. `want` is a
// mask of R_OK, W_OK and X_OK.
bool MayAccess(const PeerCredentials& peer, const fuse::Attributes& attr, int want);

}  // namespace reelfs::api

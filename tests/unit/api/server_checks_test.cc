// api/server's checks: the fd check, the memfd seal check and the dma-buf check (the mount's
// device from mountinfo is tests/unit/fuse/mount_tuning_test.cc). A real dma-buf is checked in
// the Soft-RoCE VM (tests/rdma/vgem_dmabuf_check.py): this kernel has no exporter to make one.
// The server end to end (sockets, fd passing, reads through a real mount, a killed client) is
// tests/e2e/side_channel.sh.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "api/server/buffer_check.h"
#include "api/server/path_access.h"
#include "common/unique_fd.h"

namespace reelfs::api {
namespace {

TEST_CASE("fd check: a regular file of the mount's device, nothing else") {
  char templ[] = "/tmp/reelfs-fdcheck-XXXXXX";
  UniqueFd file(mkstemp(templ));
  REQUIRE(file.valid());
  struct stat st {};
  REQUIRE(fstat(file.get(), &st) == 0);
  auto ok = CheckMountFd(file.get(), st.st_dev);
  REQUIRE(ok.ok());
  CHECK(ok->ino == st.st_ino);
  CHECK_FALSE(ok->nonblock);
  CHECK(CheckMountFd(file.get(), st.st_dev + 1).status().code() == StatusCode::kPermissionDenied);
  auto dir = UniqueFd::Open("/tmp", O_RDONLY | O_DIRECTORY);
  REQUIRE(dir.ok());
  struct stat dst {};
  REQUIRE(fstat(dir->get(), &dst) == 0);
  CHECK(CheckMountFd(dir->get(), dst.st_dev).status().code() == StatusCode::kPermissionDenied);
  unlink(templ);
}

TEST_CASE("memfd check: sealed, large enough, page-multiple; else EINVAL") {
  const long page = sysconf(_SC_PAGESIZE);
  UniqueFd unsealed(memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  REQUIRE(ftruncate(unsealed.get(), 2 * page) == 0);
  CHECK(MapSealedMemfd(unsealed.get(), page).status().code() == StatusCode::kInvalidArgument);
  REQUIRE(fcntl(unsealed.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  auto mapped = MapSealedMemfd(unsealed.get(), 2 * page);
  REQUIRE(mapped.ok());
  CHECK((*mapped)->bytes().size() == static_cast<size_t>(2 * page));
  CHECK_FALSE(MapSealedMemfd(unsealed.get(), 3 * page).ok());  // larger than the memfd
  CHECK_FALSE(MapSealedMemfd(unsealed.get(), 100).ok());       // not a page multiple
  CHECK_FALSE(MapSealedMemfd(unsealed.get(), 0).ok());
  char templ[] = "/tmp/reelfs-memfdcheck-XXXXXX";
  UniqueFd plain(mkstemp(templ));
  CHECK(MapSealedMemfd(plain.get(), page).status().code() == StatusCode::kInvalidArgument);
  unlink(templ);
}

TEST_CASE("dma-buf check: a memfd, a file, a pipe or a closed fd is not a dma-buf") {
  const long page = sysconf(_SC_PAGESIZE);
  UniqueFd memfd(memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  REQUIRE(ftruncate(memfd.get(), 4 * page) == 0);
  REQUIRE(fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  CHECK(CheckDmaBuf(memfd.get(), page).status().code() == StatusCode::kInvalidArgument);
  char templ[] = "/tmp/reelfs-dmabufcheck-XXXXXX";
  UniqueFd plain(mkstemp(templ));
  unlink(templ);
  REQUIRE(ftruncate(plain.get(), page) == 0);
  CHECK(CheckDmaBuf(plain.get(), page).status().code() == StatusCode::kInvalidArgument);
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  UniqueFd r(p[0]), w(p[1]);
  CHECK(CheckDmaBuf(r.get(), page).status().code() == StatusCode::kInvalidArgument);
  const int closed = w.Release();
  close(closed);
  CHECK_FALSE(CheckDmaBuf(closed, page).ok());
}

}  // namespace
}  // namespace reelfs::api

namespace reelfs::api {
namespace {

fuse::Attributes Attr(bool dir, uint32_t perm, uid_t uid, gid_t gid) {
  fuse::Attributes a;
  a.is_dir = dir;
  a.mode = (dir ? S_IFDIR : S_IFREG) | perm;
  a.uid = uid;
  a.gid = gid;
  return a;
}

TEST_CASE("OPEN_PATH paths: relative components, no '.', '..' or empty ones") {
  auto ok = SplitMountPath("a/b c/f.bin");
  REQUIRE(ok.ok());
  CHECK(*ok == std::vector<std::string>{"a", "b c", "f.bin"});
  CHECK(SplitMountPath("f").value() == std::vector<std::string>{"f"});
  CHECK(SplitMountPath(std::string(255, 'n')).ok());
  for (const std::string& bad :
       {std::string(), std::string("/a"), std::string("a/"), std::string("a//b"),
        std::string("./a"), std::string("a/../b"), std::string(".."), std::string(256, 'n'),
        std::string("a\0b", 3)}) {
    CAPTURE(bad);
    CHECK(SplitMountPath(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("OPEN_PATH permissions: as default_permissions, and the mount's owner gate") {
  const PeerCredentials owner{.pid = 1, .uid = 1000, .gid = 1000, .groups = {}};
  const PeerCredentials grouped{.pid = 2, .uid = 2000, .gid = 2000, .groups = {50, 1000}};
  const PeerCredentials other{.pid = 3, .uid = 3000, .gid = 3000, .groups = {}};
  const PeerCredentials root{.pid = 4, .uid = 0, .gid = 0, .groups = {}};
  const auto file0440 = Attr(false, 0440, 1000, 1000);
  CHECK(MayAccess(owner, file0440, R_OK));
  CHECK(MayAccess(grouped, file0440, R_OK));  // by a supplementary group
  CHECK_FALSE(MayAccess(other, file0440, R_OK));
  CHECK(MayAccess(root, file0440, R_OK));
  CHECK_FALSE(MayAccess(owner, file0440, X_OK));
  CHECK_FALSE(MayAccess(root, file0440, X_OK));  // root executes only what some x bit allows
  // The owner's bits apply to the owner even when the others' are wider.
  CHECK_FALSE(MayAccess(owner, Attr(false, 0044, 1000, 1000), R_OK));
  CHECK(MayAccess(other, Attr(false, 0444, 1000, 1000), R_OK));
  const auto dir0750 = Attr(true, 0750, 1000, 1000);
  CHECK(MayAccess(owner, dir0750, X_OK));
  CHECK(MayAccess(grouped, dir0750, X_OK));
  CHECK_FALSE(MayAccess(other, dir0750, X_OK));
  CHECK(MayAccess(root, Attr(true, 0, 1000, 1000), X_OK));
  // Without allow_other FUSE admits the mounting user only, root included.
  CHECK(MayUseMount(owner, false, 1000, 1000));
  CHECK_FALSE(MayUseMount(other, false, 1000, 1000));
  CHECK_FALSE(MayUseMount(root, false, 1000, 1000));
  CHECK(MayUseMount(other, true, 1000, 1000));
}

TEST_CASE("peer credentials of a socketpair are this process's") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  auto cred = ReadPeerCredentials(a.get());
  REQUIRE(cred.ok());
  CHECK(cred->pid == getpid());
  CHECK(cred->uid == geteuid());
  CHECK(cred->gid == getegid());
  std::vector<gid_t> groups(static_cast<size_t>(getgroups(0, nullptr)));
  REQUIRE(getgroups(static_cast<int>(groups.size()), groups.data()) >= 0);
  std::sort(groups.begin(), groups.end());
  std::vector<gid_t> got = cred->groups;
  std::sort(got.begin(), got.end());
  CHECK(got == groups);
}

}  // namespace
}  // namespace reelfs::api

// api/server's checks: the fd check and the memfd seal check (the mount's device from mountinfo
// is tests/unit/fuse/mount_tuning_test.cc).
// The server end to end (sockets, fd passing, reads through a real mount, a killed client) is
// tests/e2e/side_channel.sh.
#include <fcntl.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "api/server/buffer_check.h"
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

}  // namespace
}  // namespace reelfs::api

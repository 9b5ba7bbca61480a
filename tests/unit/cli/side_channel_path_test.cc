// Where `reelfs mount` puts the side channel's socket, and the checks on its directory.
#include "cli/side_channel_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <sys/stat.h>

namespace reelfs::cli {
namespace {

TEST_SUITE("cli") {
  TEST_CASE("side channel path: off, auto per user, explicit") {
    auto off = ResolveSideChannelPath("off", "/mnt/data", 1000, nullptr);
    REQUIRE(off.ok());
    CHECK(off->empty());

    auto root = ResolveSideChannelPath("auto", "/mnt/data", 0, "/run/user/0");
    REQUIRE(root.ok());
    CHECK(root->starts_with("/run/reelfs/"));
    CHECK(root->ends_with(".sock"));

    auto xdg = ResolveSideChannelPath("auto", "/mnt/data", 1000, "/run/user/1000");
    REQUIRE(xdg.ok());
    CHECK(xdg->starts_with("/run/user/1000/reelfs/"));

    auto tmp = ResolveSideChannelPath("auto", "/mnt/data", 1000, nullptr);
    REQUIRE(tmp.ok());
    CHECK(tmp->starts_with("/tmp/reelfs-1000/"));
    // A relative XDG_RUNTIME_DIR is not trusted.
    auto relative = ResolveSideChannelPath("auto", "/mnt/data", 1000, "run");
    REQUIRE(relative.ok());
    CHECK(*relative == *tmp);

    auto explicit_path = ResolveSideChannelPath("/srv/x.sock", "/mnt/data", 1000, nullptr);
    REQUIRE(explicit_path.ok());
    CHECK(*explicit_path == "/srv/x.sock");
  }

  TEST_CASE("side channel path: one socket per mountpoint, stable across runs") {
    auto a = ResolveSideChannelPath("auto", "/mnt/a", 0, nullptr);
    auto a_again = ResolveSideChannelPath("auto", "/mnt/a", 0, nullptr);
    auto b = ResolveSideChannelPath("auto", "/mnt/b", 0, nullptr);
    REQUIRE(a.ok());
    REQUIRE(a_again.ok());
    REQUIRE(b.ok());
    CHECK(*a == *a_again);
    CHECK(*a != *b);
    // FNV-1a of "/mnt/a": pinned, so an upgrade does not move the socket of a running mount.
    CHECK(*a == "/run/reelfs/5af2babcdc20279f.sock");
  }

  TEST_CASE("side channel path: refusals") {
    CHECK(ResolveSideChannelPath("relative.sock", "/m", 0, nullptr).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(ResolveSideChannelPath("", "/m", 0, nullptr).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(ResolveSideChannelPath("/srv/dir/", "/m", 0, nullptr).status().code() ==
          StatusCode::kInvalidArgument);
    const std::string too_long = "/" + std::string(107, 'x');
    auto refused = ResolveSideChannelPath(too_long, "/m", 0, nullptr);
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("107") != std::string::npos);
    const std::string fits = "/" + std::string(106, 'x');
    CHECK(ResolveSideChannelPath(fits, "/m", 0, nullptr).ok());
    // A long XDG_RUNTIME_DIR is refused the same way, not truncated.
    const std::string long_runtime = "/" + std::string(100, 'r');
    CHECK_FALSE(ResolveSideChannelPath("auto", "/m", 1000, long_runtime.c_str()).ok());
  }

  TEST_CASE("side channel directory: created private, refused when others may write") {
    char templ[] = "/tmp/reelfs-scdir-XXXXXX";
    REQUIRE(mkdtemp(templ) != nullptr);
    const std::filesystem::path base(templ);
    const std::string sock = (base / "sub" / "m.sock").string();

    REQUIRE(PrepareSocketDirectory(sock, /*allow_other=*/false).ok());
    struct stat st {};
    REQUIRE(stat((base / "sub").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    // Existing and fine: still OK.
    CHECK(PrepareSocketDirectory(sock, false).ok());

    const std::string shared = (base / "shared" / "m.sock").string();
    REQUIRE(PrepareSocketDirectory(shared, /*allow_other=*/true).ok());
    REQUIRE(stat((base / "shared").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0755);

    // World-writable without the sticky bit: someone else could plant a socket there.
    REQUIRE(chmod((base / "sub").c_str(), 0777) == 0);
    auto open_dir = PrepareSocketDirectory(sock, false);
    CHECK(open_dir.code() == StatusCode::kFailedPrecondition);
    // Sticky (like /tmp): others cannot replace our socket.
    REQUIRE(chmod((base / "sub").c_str(), 01777) == 0);
    CHECK(PrepareSocketDirectory(sock, false).ok());

    // A symlink where the directory should be is refused, not followed.
    std::filesystem::create_symlink(base / "sub", base / "link");
    CHECK(PrepareSocketDirectory((base / "link" / "m.sock").string(), false).code() ==
          StatusCode::kFailedPrecondition);
    // A missing parent is an error, not a silent mkdir -p.
    CHECK_FALSE(PrepareSocketDirectory((base / "a" / "b" / "m.sock").string(), false).ok());
    std::filesystem::remove_all(base);
  }
}

}  // namespace
}  // namespace reelfs::cli

// fuse/lowlevel/mount_tuning: the mount's device from mountinfo (readahead tuning and the side
// channel's fd check both use it), the readahead path, the kernel request timeout and the cap.
#include "fuse/lowlevel/mount_tuning.h"

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace reelfs::fuse {
namespace {

constexpr const char* kMountInfo =
    "22 1 0:21 / /mnt/a\\040b rw - fuse.reelfs reelfs:b rw\n"
    "23 22 8:1 / /mnt/other rw - ext4 /dev/sda1 rw\n"
    "24 1 0:57 / /mnt/a\\040b rw - fuse.reelfs reelfs:c rw";  // no final newline

TEST_CASE("mount device: the last mount at the path wins, octal escapes undone") {
  auto dev = FindMountDevice(kMountInfo, "/mnt/a b");
  REQUIRE(dev.ok());
  CHECK(*dev == "0:57");
  CHECK(FindMountDevice(kMountInfo, "/mnt/other").value() == "8:1");
  CHECK(FindMountDevice(kMountInfo, "/mnt/a\\040b").status().code() == StatusCode::kNotFound);
  CHECK(FindMountDevice(kMountInfo, "/mnt").status().code() == StatusCode::kNotFound);
  CHECK(FindMountDevice("", "/").status().code() == StatusCode::kNotFound);
}

TEST_CASE("device number: major:minor, nothing else") {
  CHECK(ParseDeviceNumber("0:57").value() == makedev(0, 57));
  CHECK(ParseDeviceNumber("259:3").value() == makedev(259, 3));
  for (const char* bad : {"", ":", "0:", ":5", "x:1", "1:x", "1:2:3", "1 :2", "-1:2", "12"}) {
    CAPTURE(bad);
    CHECK(ParseDeviceNumber(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("mount device of / matches stat(2)") {
  auto dev = MountDeviceNumber("/");
  REQUIRE(dev.ok());
  struct stat st {};
  REQUIRE(stat("/", &st) == 0);
  CHECK(*dev == st.st_dev);
  CHECK(MountDeviceNumber("/no/such/mount/point").status().code() == StatusCode::kNotFound);
}

TEST_CASE("readahead path and the kernel's request timeout") {
  CHECK(ReadAheadPath("0:57", "/sys") == "/sys/class/bdi/0:57/read_ahead_kb");
  const auto root = std::filesystem::temp_directory_path() / "reelfs-mount-tuning-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "sys/fs/fuse");
  CHECK_FALSE(KernelRequestTimeout(root.string()).has_value());
  std::ofstream(root / "sys/fs/fuse/default_request_timeout") << "0\n";
  std::ofstream(root / "sys/fs/fuse/max_request_timeout") << "120\n";
  CHECK(KernelRequestTimeout(root.string()) == std::chrono::seconds(120));
  std::ofstream(root / "sys/fs/fuse/default_request_timeout") << "60\n";
  CHECK(KernelRequestTimeout(root.string()) == std::chrono::seconds(60));
  std::filesystem::remove_all(root);

  using std::chrono::seconds;
  CHECK(CapBelowRequestTimeout(seconds(300), std::nullopt) == seconds(300));
  CHECK(CapBelowRequestTimeout(seconds(30), seconds(60)) == seconds(30));
  CHECK(CapBelowRequestTimeout(seconds(300), seconds(60)) < seconds(60));
}

TEST_CASE("the kernel's pages per request (fs.fuse.max_pages_limit)") {
  const auto root = std::filesystem::temp_directory_path() / "reelfs-max-pages-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "sys/fs/fuse");
  CHECK_FALSE(KernelMaxPagesLimit(root.string()).has_value());  // before Linux 6.13: no file
  std::ofstream(root / "sys/fs/fuse/max_pages_limit") << "256\n";
  CHECK(KernelMaxPagesLimit(root.string()) == 256u);
  std::ofstream(root / "sys/fs/fuse/max_pages_limit") << "not a number\n";
  CHECK_FALSE(KernelMaxPagesLimit(root.string()).has_value());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace reelfs::fuse

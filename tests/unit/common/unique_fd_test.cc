#include "common/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include <doctest/doctest.h>

namespace reelfs {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST_SUITE("common") {
  TEST_CASE("closes on destruction, moves leave the source empty") {
    int raw = -1;
    {
      auto fd = UniqueFd::Open("/dev/null", O_RDONLY);
      REQUIRE(fd.ok());
      raw = fd->get();
      CHECK(IsOpen(raw));
      UniqueFd moved = std::move(*fd);
      CHECK_FALSE(fd->valid());
      CHECK(moved.get() == raw);
    }
    CHECK_FALSE(IsOpen(raw));
  }

  TEST_CASE("release gives up ownership; reset closes") {
    auto fd = UniqueFd::Open("/dev/null", O_RDONLY);
    REQUIRE(fd.ok());
    int raw = fd->Release();
    CHECK_FALSE(fd->valid());
    CHECK(IsOpen(raw));
    UniqueFd again(raw);
    again.Reset();
    CHECK_FALSE(IsOpen(raw));
  }

  TEST_CASE("open failure carries errno and path") {
    auto fd = UniqueFd::Open("/nonexistent/dir/file", O_RDONLY);
    REQUIRE_FALSE(fd.ok());
    CHECK(fd.status().code() == StatusCode::kNotFound);
    CHECK(fd.status().message().find("/nonexistent/dir/file") != std::string_view::npos);
  }
}

}  // namespace
}  // namespace reelfs

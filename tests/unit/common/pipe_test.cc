// OpenPipe and LargestPipeCapacity against the running kernel's limit
// (/proc/sys/fs/pipe-max-size), read here so that the test holds on any machine.
#include "common/pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string_view>

#include <doctest/doctest.h>

namespace reelfs {
namespace {

size_t PipeMaxSize() {
  std::ifstream in("/proc/sys/fs/pipe-max-size");
  size_t n = 0;
  in >> n;
  return n;
}

TEST_CASE("OpenPipe grows a pipe within the limit and carries bytes") {
  const size_t limit = PipeMaxSize();
  REQUIRE(limit >= (64u << 10));
  auto p = OpenPipe(limit);
  REQUIRE(p.ok());
  // At most the limit (less where pipe-user-pages-soft is used up, or the limit is not a power
  // of two pages), at least the default; and what F_GETPIPE_SZ says.
  CHECK(p->capacity <= limit);
  CHECK(p->capacity >= (64u << 10));
  CHECK(::fcntl(p->write_end.get(), F_GETPIPE_SZ) == static_cast<int>(p->capacity));
  // Asked for more than the limit: the default size, not a failure.
  auto over = OpenPipe(2 * limit);
  REQUIRE(over.ok());
  CHECK(over->capacity >= (4u << 10));
  CHECK(::fcntl(over->write_end.get(), F_GETPIPE_SZ) == static_cast<int>(over->capacity));
  CHECK(::fcntl(p->read_end.get(), F_GETFD) == FD_CLOEXEC);
  const char msg[] = "spliced";
  REQUIRE(::write(p->write_end.get(), msg, sizeof msg) == static_cast<ssize_t>(sizeof msg));
  char got[sizeof msg] = {};
  REQUIRE(::read(p->read_end.get(), got, sizeof got) == static_cast<ssize_t>(sizeof got));
  CHECK(std::string_view(got) == "spliced");
}

TEST_CASE("LargestPipeCapacity finds a power of two the kernel grants, within the bounds") {
  const size_t floor = 64u << 10;
  const size_t got = LargestPipeCapacity(floor, 16u << 20);
  CHECK(got >= floor);
  CHECK(got <= (16u << 20));
  CHECK((got & (got - 1)) == 0);
  // Over the limit only with CAP_SYS_RESOURCE.
  if (got > PipeMaxSize()) CHECK(::geteuid() == 0);
  CHECK(LargestPipeCapacity(floor, floor) == floor);
  // The ceiling is never exceeded (the pipe-user-pages-soft limit may give less).
  CHECK(LargestPipeCapacity(floor, 128u << 10) <= (128u << 10));
}

}  // namespace
}  // namespace reelfs

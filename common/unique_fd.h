// UniqueFd: sole owner of a POSIX file descriptor.
//
// Move-only; the moved-from object is empty (-1). Thread-safety: none; one owner at a time.
#pragma once

#include <string>

#include "common/result.h"

namespace reelfs {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;

  // open(2) with O_CLOEXEC added; the Status carries errno and the path.
  static Result<UniqueFd> Open(const std::string& path, int flags, int mode = 0644);

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int Release();
  // Closes the current descriptor (errors are logged, not returned: close cannot be retried).
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace reelfs

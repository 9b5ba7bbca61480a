// RootLock: one process at a time per gateway root (ROOT/.reelfs-gateway/lock, flock(2)). The
// server holds it while it runs; `reelfs-gateway archive` takes it too, so the offline archive
// writer never races a serving gateway over cartridge blocks and files. The kernel drops the lock
// when the process dies, so a crash never leaves the root locked.
//
// Thread-safety: a move-only owner of one fd.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::gateway {

class RootLock {
 public:
  // FailedPrecondition naming the lock file when another process holds it.
  [[nodiscard]] static Result<RootLock> Acquire(const std::string& internal_dir);
  // True when another process holds the lock now (front ends: is an owner running?).
  static bool HeldByAnother(const std::string& internal_dir);

 private:
  explicit RootLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace reelfs::gateway

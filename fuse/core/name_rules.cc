#include "fuse/core/name_rules.h"

#include "common/log.h"
#include "common/mutex.h"

namespace reelfs::fuse {

NameProblem CheckName(std::string_view name) {
  if (name.empty()) return NameProblem::kEmpty;
  if (name == "." || name == "..") return NameProblem::kDotOrDotDot;
  if (name.size() > kMaxNameBytes) return NameProblem::kTooLong;
  if (name.find('\0') != std::string_view::npos) return NameProblem::kHasNul;
  if (name.find('/') != std::string_view::npos) return NameProblem::kHasSlash;
  return NameProblem::kNone;
}

std::string_view NameProblemText(NameProblem problem) {
  switch (problem) {
    case NameProblem::kNone:
      return "valid";
    case NameProblem::kEmpty:
      return "empty path component";
    case NameProblem::kDotOrDotDot:
      return "component is '.' or '..'";
    case NameProblem::kTooLong:
      return "component longer than 255 bytes";
    case NameProblem::kHasNul:
      return "component contains NUL";
    case NameProblem::kHasSlash:
      return "component contains '/'";
  }
  return "unknown";
}

bool WarnOnce::First(std::string_view key) {
  MutexLock lock(mutex_);
  if (seen_.contains(std::string(key))) return false;
  if (seen_.size() >= capacity_) {
    if (!full_) {
      full_ = true;
      REELFS_LOG_WARN("fuse", "too many skipped keys; further warnings suppressed");
    }
    return false;
  }
  seen_.emplace(key);
  return true;
}

}  // namespace reelfs::fuse

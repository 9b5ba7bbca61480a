// Name rules: which S3 key components can be file names, and a bounded "warn once" set so a
// hostile or unusual key is reported once per mount, not once per listing (docs/semantics.md
// "Names and directories").
//
// A component cannot be a name when it is empty ("a//b"), "." or "..", longer than 255 bytes
// (NAME_MAX: the kernel would reject it anyway), or contains NUL or '/'. Such keys are skipped,
// never a crash, never a truncated or rewritten name (a rewritten name could collide with a real
// one).
//
// Thread-safety: CheckName is a pure function; WarnOnce is safe from any thread (leaf lock).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::fuse {

inline constexpr size_t kMaxNameBytes = 255;  // NAME_MAX

enum class NameProblem { kNone, kEmpty, kDotOrDotDot, kTooLong, kHasNul, kHasSlash };

NameProblem CheckName(std::string_view name);
std::string_view NameProblemText(NameProblem problem);

// Remembers which keys were already warned about. Bounded: past `capacity` keys it stops
// remembering (and so stops warning, saying so once), because a bucket full of hostile keys must
// not grow memory without limit.
class WarnOnce {
 public:
  explicit WarnOnce(size_t capacity = 100'000) : capacity_(capacity) {}
  // True the first time `key` is seen (the caller then logs).
  bool First(std::string_view key);

 private:
  const size_t capacity_;
  Mutex mutex_;  // leaf lock
  std::unordered_set<std::string> seen_ GUARDED_BY(mutex_);
  bool full_ GUARDED_BY(mutex_) = false;
};

}  // namespace reelfs::fuse

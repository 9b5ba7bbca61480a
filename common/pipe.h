// Pipe: a pipe(2) and what it can hold, for the spliced read path (socket -> pipe -> /dev/fuse).
//
// A pipe counts slots, not bytes: a socket's bytes fill its page slots partly, so a pipe holds
// a socket's n bytes only at about twice n. Growing a pipe above /proc/sys/fs/pipe-max-size takes
// CAP_SYS_RESOURCE; both helpers take what the system allows and say how much it was.
//
// Thread-safety: a Pipe has one owner at a time; the functions are safe from any thread.
#pragma once

#include <cstddef>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
  size_t capacity = 0;  // bytes, as F_GETPIPE_SZ reports them
};

// A close-on-exec pipe grown to `want` bytes where allowed, else of the size it got.
Result<Pipe> OpenPipe(size_t want);

// The largest capacity this process may give a pipe, trying powers of two from `ceiling` down
// to `floor`; `floor` when none is granted (or pipe2 fails).
size_t LargestPipeCapacity(size_t floor, size_t ceiling);

}  // namespace reelfs

// ProcessOf: the process (thread group) a FUSE request's caller belongs to. The kernel reports the
// calling *thread*; a file written by one thread and closed by another is still one writer, and a
// child that inherited the fd (fork, then exec or exit) is another process, whose FLUSH must not
// complete the parent's upload (write_handles.h).
//
// Thread-safety: a pure function of /proc; safe from any thread.
//
// Internal to fuse/core.
#pragma once

#include <cstdint>

namespace reelfs::fuse::detail {

// The Tgid of thread `tid` per /proc/<tid>/status; `tid` itself when that cannot be read (the
// thread is gone, or /proc is another pid namespace's). 0 stays 0 (unknown caller).
uint32_t ProcessOf(uint32_t tid);

}  // namespace reelfs::fuse::detail

// Helpers for the non-blocking channels of rdmaio/verbs (rdma_cm event channels, completion
// channels): every wait in the module goes through WaitReadable and so has a deadline.
//
// Thread-safety: pure functions over the given descriptor.
#pragma once

#include <chrono>

#include "common/result.h"

namespace reelfs::rdmaio::verbs::internal {

using Deadline = std::chrono::steady_clock::time_point;

// Sets O_NONBLOCK on `fd`; `what` names the channel in the error.
Status SetNonBlocking(int fd, const char* what);

// Waits until `fd` is readable (true) or the deadline passes (false).
Result<bool> WaitReadable(int fd, Deadline deadline);

}  // namespace reelfs::rdmaio::verbs::internal

// The one place a Status becomes an errno. Every row is a judgement call written down in
// docs/semantics.md and tested in tests/unit/fuse/errno_map_test.cc.
//
// Thread-safety: pure function.
#pragma once

#include "common/status.h"

namespace reelfs::fuse {

// A positive errno for a non-OK status (0 for OK).
int StatusToErrno(const Status& status);

}  // namespace reelfs::fuse

// The tests' decorators derive from s3::ForwardingStore (s3/forwarding_store.h) under this name.
#pragma once

#include "s3/forwarding_store.h"

namespace reelfs::testing {

using ForwardingStore = s3::ForwardingStore;

}  // namespace reelfs::testing

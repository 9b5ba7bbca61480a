// The gateway's credential pair: from options, from REELFS_GATEWAY_ACCESS_KEY /
// REELFS_GATEWAY_SECRET_KEY, or generated at start and written to
// ROOT/.reelfs-gateway/credentials (mode 0600, AWS INI format). The secret is never logged.
//
// Thread-safety: start-up only.
#pragma once

#include <string>

#include "common/result.h"
#include "gateway/options.h"

namespace reelfs::gateway {

struct CredentialSource {
  bool generated = false;
  std::string file;  // where a generated pair was written
};

// Fills options->access_key/secret_key when empty. Half a pair is an error.
Result<CredentialSource> ResolveCredentials(Options* options, const std::string& internal_dir);

}  // namespace reelfs::gateway

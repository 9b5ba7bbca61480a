// The gateway's credential pair: from options, from REELFS_GATEWAY_ACCESS_KEY /
// REELFS_GATEWAY_SECRET_KEY, or generated at start (a fresh pair each start) and written to
// ROOT/.reelfs-gateway/credentials (mode 0600, AWS INI format) once the port is bound, so a
// gateway that cannot start leaves no file naming keys nothing accepts. The secret is never
// logged.
//
// Thread-safety: start-up only.
#pragma once

#include <string>

#include "common/result.h"
#include "gateway/options.h"

namespace reelfs::gateway {

struct CredentialSource {
  bool generated = false;
  std::string file;  // where a generated pair is to be written (WriteGeneratedCredentials)
};

// Fills options->access_key/secret_key when empty (generating a pair, in memory only; a front end
// reads the pair its owner wrote instead, FailedPrecondition when there is none). Half a pair is
// an error.
Result<CredentialSource> ResolveCredentials(Options* options, const std::string& internal_dir);

// Writes a generated pair to source.file (0600, replaced atomically); nothing for a given pair.
Status WriteGeneratedCredentials(const Options& options, const CredentialSource& source);

}  // namespace reelfs::gateway

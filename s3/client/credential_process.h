// credential_process: credentials from a program, as the AWS CLI and SDKs run it for a profile's
// `credential_process = COMMAND` in the config file. The command runs through /bin/sh with the
// caller's environment; its stdout must be one JSON object {"Version": 1, "AccessKeyId",
// "SecretAccessKey", optional "SessionToken", optional "Expiration" (RFC 3339)}. Its stderr goes
// to ours (a helper's prompt or error). A non-zero exit, malformed JSON, another Version or a
// missing key is an error naming the command and what was wrong, never the secret.
//
// Thread-safety: a pure function apart from running the program (fork/exec through popen).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {

struct ProcessCredentials {
  Credentials credentials;
  std::optional<std::chrono::system_clock::time_point> expiration;  // none: long-term keys
};

// Parses the program's stdout (`command` only names it in errors).
Result<ProcessCredentials> ParseCredentialProcessOutput(std::string_view json,
                                                        std::string_view command);

// Runs `command` and parses what it printed.
Result<ProcessCredentials> RunCredentialProcess(const std::string& command);

}  // namespace reelfs::s3

// The documents temporary credentials arrive in, parsed without trusting them:
//   STS   AssumeRoleResponse / AssumeRoleWithWebIdentityResponse (XML), and STS's ErrorResponse;
//   JSON  the container credentials endpoint (ECS, EKS Pod Identity) and EC2 instance metadata
//         (IMDS): {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}, IMDS adding "Code".
// Also the form body STS requests carry. Nothing here does I/O (s3/client/credential_chain.h
// fetches them); every malformed document is a Status naming what was wrong, never a secret.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {

struct TemporaryCredentials {
  Credentials credentials;
  // None: long-term keys that never need refreshing.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

// `action` is "AssumeRole" or "AssumeRoleWithWebIdentity": the body of a 2xx answer must be
// <ACTIONResponse><ACTIONResult><Credentials>… with all four members.
Result<TemporaryCredentials> ParseStsCredentials(std::string_view xml, std::string_view action);

// A non-2xx STS answer: <ErrorResponse><Error><Code>… becomes kUnauthenticated (bad or unknown
// signing keys), kPermissionDenied (AccessDenied, InvalidIdentityToken, ExpiredToken…),
// kInvalidArgument (ValidationError…) or kUnavailable (5xx, throttling), its message saying
// "STS ACTION: CODE: MESSAGE (HTTP N)". A body that is not such a document still gives a Status.
Status StsErrorToStatus(int http_status, std::string_view body, std::string_view action);

// `source` names the endpoint in errors ("container credentials endpoint", "EC2 instance
// metadata"). IMDS documents carry "Code", which must be "Success".
Result<TemporaryCredentials> ParseJsonCredentials(std::string_view json, std::string_view source);

// application/x-www-form-urlencoded, in the given order (SigV4 signs the body's hash, not the
// order, so any order is valid).
std::string EncodeForm(const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace reelfs::s3

// The credential providers that ask a service over HTTP, as the AWS SDKs do:
//   STS AssumeRoleWithWebIdentity  a web identity token file (EKS IRSA, GitHub OIDC…) for a role;
//   STS AssumeRole                 a role assumed with a source profile's keys (SigV4, service
//   sts); container credentials          AWS_CONTAINER_CREDENTIALS_{RELATIVE,FULL}_URI with the
//                                  authorization token (ECS, EKS Pod Identity);
//   EC2 instance metadata          IMDSv2 only: a session token first, then the role's keys.
// Each fetch is one blocking exchange sequence with its own timeouts; aws_config.h decides which
// one applies, RefreshingCredentials calls it again before expiry. Errors name the provider and
// the endpoint, never a secret or a token.
//
// Thread-safety: pure functions apart from their HTTP exchanges; call from any thread.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "s3/protocol/credential_documents.h"

namespace reelfs::s3 {

struct StsEndpoint {
  std::string url;     // "https://sts.us-east-1.amazonaws.com", or AWS_ENDPOINT_URL_STS
  std::string region;  // signing region for AssumeRole
  std::string ca_bundle;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

// "https://sts.REGION.amazonaws.com" (the SDKs' regional default since 2022).
std::string DefaultStsUrl(const std::string& region);

// The token file is read at every call: its owner (kubelet, a CI runner) rotates it.
Result<TemporaryCredentials> AssumeRoleWithWebIdentity(const StsEndpoint& sts,
                                                       const std::string& role_arn,
                                                       const std::string& session_name,
                                                       const std::string& token_file);

struct AssumeRoleParams {
  std::string role_arn;
  std::string session_name;
  std::string external_id;   // empty: none
  int duration_seconds = 0;  // 0: STS's default (1 h)
};
Result<TemporaryCredentials> AssumeRole(const StsEndpoint& sts, const Credentials& source,
                                        const AssumeRoleParams& params);

struct ContainerEndpoint {
  std::string url;              // full URL of the credentials document
  std::string auth_token;       // AWS_CONTAINER_AUTHORIZATION_TOKEN
  std::string auth_token_file;  // AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read at every call)
  std::chrono::milliseconds timeout{std::chrono::seconds(2)};
};
// kInvalidArgument for a plain-http URL to a host other than loopback or the ECS/EKS link-local
// addresses (the SDKs refuse those too: a token must not travel in clear to anywhere else).
Status CheckContainerUrl(const std::string& url);
Result<TemporaryCredentials> FetchContainerCredentials(const ContainerEndpoint& endpoint);

struct ImdsEndpoint {
  std::string url = "http://169.254.169.254";  // AWS_EC2_METADATA_SERVICE_ENDPOINT
  std::chrono::milliseconds timeout{std::chrono::seconds(1)};
};
Result<TemporaryCredentials> FetchImdsCredentials(const ImdsEndpoint& endpoint);

}  // namespace reelfs::s3

// Credentials, region and endpoint resolved the way the AWS CLI and SDKs do it.
//
// Sources, first match wins (the SDKs' default chain; docs/configuration.md has the table):
//   credentials  1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//                2. AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN: STS AssumeRoleWithWebIdentity;
//                3. the profile: `role_arn` with `source_profile` (STS AssumeRole signed with the
//                   source's keys), `credential_source = Environment` or
//                   `web_identity_token_file`; else static keys from the shared credentials file
//                   (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials) [PROFILE], then the config
//                   file (AWS_CONFIG_FILE, ~/.aws/config) [profile PROFILE]; else its
//                   `credential_process` (s3/client/credential_process.h);
//                4. container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on
//                   169.254.170.2) or _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
//                5. EC2 instance metadata (IMDSv2) unless AWS_EC2_METADATA_DISABLED=true, at
//                   AWS_EC2_METADATA_SERVICE_ENDPOINT or 169.254.169.254; its failure is "no
//                   credentials", not an error.
//                A profile named by the caller skips 1, 2, 4 and 5. STS is AWS_ENDPOINT_URL_STS,
//                the profile's nested `sts = endpoint_url`, else https://sts.REGION.amazonaws.com.
//                Providers 2-5 and an expiring credential_process hand back temporary
//                credentials and `refresh` (see RefreshingCredentials).
//   profile      the caller's override, AWS_PROFILE, "default".
//   region       AWS_REGION, AWS_DEFAULT_REGION, config `region`, "us-east-1".
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, config `s3 =` / `  endpoint_url =`
//   (nested),
//                config `endpoint_url`; empty means AWS itself.
//
// The environment is read through an EnvLookup so tests need not touch the process environment.
// Thread-safety: no shared state (ProcessEnvironment reads getenv; do not race it with setenv);
// resolving may run a credential_process or ask STS, a container endpoint or EC2 metadata.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/protocol/credential_documents.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {

// An INI file as the AWS tools read it: section -> key -> value. Keys are lowercased; a nested
// property ("s3 =" followed by indented "endpoint_url = X") is stored as "s3.endpoint_url".
// Lines starting with '#' or ';' are comments.
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
Result<IniSections> ParseIni(std::string_view text, std::string_view origin = "ini");
// A missing file is an empty result, not an error (the AWS tools treat it so).
Result<IniSections> LoadIniFile(const std::string& path);

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnvironment();

struct AwsSettings {
  std::string profile;
  Credentials credentials;         // empty when no source had any
  std::string credentials_source;  // "environment", "/home/u/.aws/credentials [default]", ...
  // Temporary credentials: when they stop working, and how to fetch new ones (empty for
  // long-term keys). RefreshingCredentials calls it before the expiration.
  std::optional<std::chrono::system_clock::time_point> credentials_expiration;
  std::function<Result<TemporaryCredentials>()> refresh;
  std::string region;
  std::string endpoint_url;  // empty: AWS (https://s3.REGION.amazonaws.com)
  // PEM file of the CAs trusted for https: AWS_CA_BUNDLE, else the profile's ca_bundle (as the
  // AWS CLI and SDKs); empty: the system's store.
  std::string ca_bundle;
};

// `profile_override` is what a --profile flag would give (empty: none).
Result<AwsSettings> ResolveAwsSettings(const EnvLookup& env,
                                       std::string_view profile_override = {});

// "AKIA…MPLE (secret ****, session token: yes)": never prints a secret.
std::string DescribeCredentials(const Credentials& creds);

}  // namespace reelfs::s3

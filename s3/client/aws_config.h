// Credentials, region and endpoint resolved the way the AWS CLI and SDKs do it.
//
// Sources, first match wins:
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), unless a profile
//                was named explicitly by the caller; then the shared credentials file
//                (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials) section [PROFILE]; then
//                the config file (AWS_CONFIG_FILE, default ~/.aws/config) section [profile PROFILE]
//                ([default] for the default profile); then the profile's `credential_process`
//                in the config file (s3/client/credential_process.h), run once.
//   profile      the caller's override, AWS_PROFILE, "default".
//   region       AWS_REGION, AWS_DEFAULT_REGION, config `region`, "us-east-1".
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, config `s3 =` / `  endpoint_url =`
//   (nested),
//                config `endpoint_url`; empty means AWS itself.
//
// The environment is read through an EnvLookup so tests need not touch the process environment.
// Thread-safety: pure functions (ProcessEnvironment reads getenv; do not race it with setenv).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
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
  // Temporary credentials (credential_process with "Expiration"): when they stop working. They
  // are not refreshed; the caller says so.
  std::optional<std::chrono::system_clock::time_point> credentials_expiration;
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

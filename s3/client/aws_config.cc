#include "s3/client/aws_config.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/log.h"
#include "common/strings.h"
#include "fmt/format.h"
#include "s3/client/credential_process.h"
#include "s3/client/credential_providers.h"

namespace reelfs::s3 {
namespace {

std::optional<std::string> NonEmpty(const EnvLookup& env, const std::string& name) {
  auto v = env(name);
  if (v && !v->empty()) return v;
  return std::nullopt;
}

const std::string* Find(const IniSections& ini, const std::string& section,
                        const std::string& key) {
  auto s = ini.find(section);
  if (s == ini.end()) return nullptr;
  auto k = s->second.find(key);
  if (k == s->second.end() || k->second.empty()) return nullptr;
  return &k->second;
}

}  // namespace

Result<IniSections> ParseIni(std::string_view text, std::string_view origin) {
  IniSections out;
  std::map<std::string, std::string>* section = nullptr;
  std::string parent;  // key of the last "name =" with an empty value: its indented lines nest
  int line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    std::string_view line = Trim(raw, kWhitespace);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return Status::InvalidArgument(
            fmt::format("{}:{}: unterminated section header", origin, line_no));
      }
      // "[profile  dev]" and "[ profile dev ]": collapse inner whitespace as the CLI does.
      std::string name(Trim(line.substr(1, line.size() - 2), kWhitespace));
      if (name.rfind("profile", 0) == 0 && name.size() > 7 && (name[7] == ' ' || name[7] == '\t')) {
        name = "profile " + std::string(Trim(std::string_view(name).substr(7), kWhitespace));
      }
      section = &out[name];
      parent.clear();
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || section == nullptr) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: expected 'key = value' inside a [section]", origin, line_no));
    }
    std::string key = Lower(Trim(line.substr(0, eq), kWhitespace));
    std::string value(Trim(line.substr(eq + 1), kWhitespace));
    if (indented && !parent.empty()) {
      (*section)[parent + "." + key] = std::move(value);
      continue;
    }
    parent = value.empty() ? key : std::string();
    (*section)[std::move(key)] = std::move(value);
  }
  return out;
}

Result<IniSections> LoadIniFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IniSections{};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseIni(text.str(), path);
}

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {

// What the credential providers read, resolved once.
struct ChainContext {
  const EnvLookup& env;
  const IniSections& credentials_ini;
  const IniSections& config_ini;
  std::string credentials_path;
  std::string config_path;
  std::string region;
  std::string ca_bundle;
};

std::string ConfigSection(const IniSections& config_ini, const std::string& profile) {
  // The config file names profiles "[profile NAME]", except the default which may be "[default]".
  std::string section = "profile " + profile;
  if (profile == "default" && config_ini.count(section) == 0) section = "default";
  return section;
}

StsEndpoint Sts(const ChainContext& ctx, const std::string& section) {
  StsEndpoint sts;
  sts.region = ctx.region;
  sts.ca_bundle = ctx.ca_bundle;
  if (auto e = NonEmpty(ctx.env, "AWS_ENDPOINT_URL_STS")) {
    sts.url = *e;
  } else if (const std::string* c = Find(ctx.config_ini, section, "sts.endpoint_url")) {
    sts.url = *c;
  } else {
    sts.url = DefaultStsUrl(ctx.region);
  }
  return sts;
}

std::string SessionName(const ChainContext& ctx, const std::string* configured) {
  if (auto n = NonEmpty(ctx.env, "AWS_ROLE_SESSION_NAME")) return *n;
  if (configured != nullptr) return *configured;
  // The SDKs' default: a name that says who and when, unique enough for CloudTrail.
  return fmt::format("reelfs-session-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
}

// Fetches once and keeps the fetcher for refreshes.
Status UseFetcher(AwsSettings& out, std::string source,
                  std::function<Result<TemporaryCredentials>()> fetch) {
  REELFS_ASSIGN_OR_RETURN(TemporaryCredentials got, fetch());
  out.credentials = std::move(got.credentials);
  out.credentials_expiration = got.expiration;
  out.credentials_source = std::move(source);
  if (out.credentials_expiration) out.refresh = std::move(fetch);
  return Status::Ok();
}

std::optional<TemporaryCredentials> StaticKeys(const ChainContext& ctx, const std::string& profile,
                                               std::string* source) {
  const std::pair<const IniSections*, std::pair<std::string, std::string>> files[] = {
      {&ctx.credentials_ini, {profile, ctx.credentials_path}},
      {&ctx.config_ini, {ConfigSection(ctx.config_ini, profile), ctx.config_path}},
  };
  for (const auto& [ini, where] : files) {
    const std::string* key = Find(*ini, where.first, "aws_access_key_id");
    const std::string* secret = Find(*ini, where.first, "aws_secret_access_key");
    if (key == nullptr || secret == nullptr) continue;
    TemporaryCredentials out;
    out.credentials.access_key_id = *key;
    out.credentials.secret_access_key = *secret;
    const std::string* token = Find(*ini, where.first, "aws_session_token");
    out.credentials.session_token = token != nullptr ? *token : "";
    *source = fmt::format("{} [{}]", where.second, where.first);
    return out;
  }
  return std::nullopt;
}

// A profile's own credentials, in the SDKs' order: role_arn (with source_profile,
// credential_source or web_identity_token_file), static keys, credential_process. `depth`
// bounds source_profile chains (and cycles).
Status ProfileCredentials(const ChainContext& ctx, const std::string& profile, int depth,
                          AwsSettings& out) {
  if (depth > 4) {
    return Status::InvalidArgument(
        fmt::format("AWS profile '{}': source_profile chain longer than 4 (a cycle?)", profile));
  }
  const std::string section = ConfigSection(ctx.config_ini, profile);
  if (const std::string* role = Find(ctx.config_ini, section, "role_arn")) {
    const std::string where = fmt::format("{} [{}]", ctx.config_path, section);
    const StsEndpoint sts = Sts(ctx, section);
    const std::string session =
        SessionName(ctx, Find(ctx.config_ini, section, "role_session_name"));
    if (const std::string* token_file = Find(ctx.config_ini, section, "web_identity_token_file")) {
      return UseFetcher(out, fmt::format("STS AssumeRoleWithWebIdentity for {} ({})", *role, where),
                        [sts, role = *role, session, file = *token_file] {
                          return AssumeRoleWithWebIdentity(sts, role, session, file);
                        });
    }
    AssumeRoleParams params;
    params.role_arn = *role;
    params.session_name = session;
    if (const std::string* id = Find(ctx.config_ini, section, "external_id")) {
      params.external_id = *id;
    }
    if (const std::string* d = Find(ctx.config_ini, section, "duration_seconds")) {
      params.duration_seconds = std::atoi(d->c_str());
      if (params.duration_seconds < 900 || params.duration_seconds > 43200) {
        return Status::InvalidArgument(
            fmt::format("{}: duration_seconds must be 900..43200, not '{}'", where, *d));
      }
    }
    AwsSettings source;
    if (const std::string* from = Find(ctx.config_ini, section, "source_profile")) {
      if (*from == profile) {
        // A profile may hold the keys its own role is assumed with.
        std::string keys_from;
        const auto keys = StaticKeys(ctx, profile, &keys_from);
        if (!keys) {
          return Status::Unauthenticated(
              fmt::format("{}: source_profile is itself but it has no keys", where));
        }
        source.credentials = keys->credentials;
      } else {
        REELFS_RETURN_IF_ERROR(ProfileCredentials(ctx, *from, depth + 1, source));
      }
    } else if (const std::string* cs = Find(ctx.config_ini, section, "credential_source")) {
      if (*cs == "Environment") {
        source.credentials.access_key_id = NonEmpty(ctx.env, "AWS_ACCESS_KEY_ID").value_or("");
        source.credentials.secret_access_key =
            NonEmpty(ctx.env, "AWS_SECRET_ACCESS_KEY").value_or("");
        source.credentials.session_token = NonEmpty(ctx.env, "AWS_SESSION_TOKEN").value_or("");
      } else {
        return Status::InvalidArgument(fmt::format(
            "{}: credential_source '{}' is not supported (Environment is; use source_profile)",
            where, *cs));
      }
    } else {
      return Status::InvalidArgument(fmt::format(
          "{}: role_arn needs source_profile, credential_source or web_identity_token_file",
          where));
    }
    if (source.credentials.empty()) {
      return Status::Unauthenticated(
          fmt::format("{}: the source of role {} has no credentials", where, *role));
    }
    // A source with temporary credentials of its own (a role, web identity, an expiring
    // credential_process) is fetched anew for each re-assumption, so it never signs with
    // expired keys.
    return UseFetcher(out, fmt::format("STS AssumeRole of {} ({})", *role, where),
                      [sts, keys = source.credentials, source_refresh = source.refresh,
                       params]() -> Result<TemporaryCredentials> {
                        Credentials signing = keys;
                        if (source_refresh) {
                          REELFS_ASSIGN_OR_RETURN(TemporaryCredentials fresh, source_refresh());
                          signing = std::move(fresh.credentials);
                        }
                        return AssumeRole(sts, signing, params);
                      });
  }
  std::string keys_from;
  if (auto keys = StaticKeys(ctx, profile, &keys_from)) {
    out.credentials = std::move(keys->credentials);
    out.credentials_source = std::move(keys_from);
    return Status::Ok();
  }
  if (const std::string* command = Find(ctx.config_ini, section, "credential_process")) {
    return UseFetcher(out, fmt::format("credential_process of {} [{}]", ctx.config_path, section),
                      [command = *command]() -> Result<TemporaryCredentials> {
                        REELFS_ASSIGN_OR_RETURN(ProcessCredentials got,
                                                RunCredentialProcess(command));
                        return TemporaryCredentials{std::move(got.credentials), got.expiration};
                      });
  }
  return Status::Ok();
}

}  // namespace

Result<AwsSettings> ResolveAwsSettings(const EnvLookup& env, std::string_view profile_override) {
  AwsSettings out;
  const bool explicit_profile = !profile_override.empty();
  if (explicit_profile) {
    out.profile = std::string(profile_override);
  } else {
    out.profile = NonEmpty(env, "AWS_PROFILE").value_or("default");
  }

  const std::string home = NonEmpty(env, "HOME").value_or("");
  const std::string credentials_path =
      NonEmpty(env, "AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials");
  const std::string config_path = NonEmpty(env, "AWS_CONFIG_FILE").value_or(home + "/.aws/config");
  REELFS_ASSIGN_OR_RETURN(IniSections credentials_ini, LoadIniFile(credentials_path));
  REELFS_ASSIGN_OR_RETURN(IniSections config_ini, LoadIniFile(config_path));
  const std::string config_section = ConfigSection(config_ini, out.profile);

  // Region.
  if (auto r = NonEmpty(env, "AWS_REGION")) {
    out.region = *r;
  } else if (auto dr = NonEmpty(env, "AWS_DEFAULT_REGION")) {
    out.region = *dr;
  } else if (const std::string* cr = Find(config_ini, config_section, "region")) {
    out.region = *cr;
  } else {
    out.region = "us-east-1";
  }

  // Endpoint.
  if (auto e = NonEmpty(env, "AWS_ENDPOINT_URL_S3")) {
    out.endpoint_url = *e;
  } else if (auto g = NonEmpty(env, "AWS_ENDPOINT_URL")) {
    out.endpoint_url = *g;
  } else if (const std::string* s3 = Find(config_ini, config_section, "s3.endpoint_url")) {
    out.endpoint_url = *s3;
  } else if (const std::string* ce = Find(config_ini, config_section, "endpoint_url")) {
    out.endpoint_url = *ce;
  }

  // Trusted CAs.
  if (auto ca = NonEmpty(env, "AWS_CA_BUNDLE")) {
    out.ca_bundle = *ca;
  } else if (const std::string* cc = Find(config_ini, config_section, "ca_bundle")) {
    out.ca_bundle = *cc;
  }

  // Credentials, first provider that has some wins (aws_config.h lists the order).
  const ChainContext ctx{env,         credentials_ini, config_ini,   credentials_path,
                         config_path, out.region,      out.ca_bundle};
  auto env_key = NonEmpty(env, "AWS_ACCESS_KEY_ID");
  auto env_secret = NonEmpty(env, "AWS_SECRET_ACCESS_KEY");
  auto web_token_file = NonEmpty(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
  auto web_role = NonEmpty(env, "AWS_ROLE_ARN");
  if (!explicit_profile && env_key && env_secret) {
    out.credentials.access_key_id = *env_key;
    out.credentials.secret_access_key = *env_secret;
    out.credentials.session_token = NonEmpty(env, "AWS_SESSION_TOKEN").value_or("");
    out.credentials_source = "environment";
    return out;
  }
  if (!explicit_profile && web_token_file && web_role) {
    const StsEndpoint sts = Sts(ctx, config_section);
    const std::string session = SessionName(ctx, nullptr);
    REELFS_RETURN_IF_ERROR(
        UseFetcher(out,
                   fmt::format("STS AssumeRoleWithWebIdentity for {} (AWS_WEB_IDENTITY_TOKEN_FILE)",
                               *web_role),
                   [sts, role = *web_role, session, file = *web_token_file] {
                     return AssumeRoleWithWebIdentity(sts, role, session, file);
                   }));
    return out;
  }
  REELFS_RETURN_IF_ERROR(ProfileCredentials(ctx, out.profile, 0, out));
  if (!out.credentials.empty()) return out;
  if (explicit_profile) {
    if (credentials_ini.count(out.profile) == 0 && config_ini.count(config_section) == 0) {
      return Status::NotFound(fmt::format("AWS profile '{}' not found in {} or {}", out.profile,
                                          credentials_path, config_path));
    }
    return out;  // a named profile without credentials: anonymous, as the CLI's --no-sign-request
  }

  // Container credentials (ECS, EKS Pod Identity).
  ContainerEndpoint container;
  if (auto rel = NonEmpty(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    container.url = "http://169.254.170.2" + *rel;
  } else if (auto full = NonEmpty(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    container.url = *full;
  }
  if (!container.url.empty()) {
    container.auth_token = NonEmpty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or("");
    container.auth_token_file =
        NonEmpty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("");
    REELFS_RETURN_IF_ERROR(UseFetcher(out, "container credentials " + container.url, [container] {
      return FetchContainerCredentials(container);
    }));
    return out;
  }

  // EC2 instance metadata, last. Not being on EC2 is the common case: no credentials, no error.
  if (Lower(NonEmpty(env, "AWS_EC2_METADATA_DISABLED").value_or("false")) == "true") return out;
  ImdsEndpoint imds;
  if (auto e = NonEmpty(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT")) {
    imds.url = *e;
  } else if (const std::string* c =
                 Find(config_ini, config_section, "ec2_metadata_service_endpoint")) {
    imds.url = *c;
  }
  const Status found = UseFetcher(out, "EC2 instance metadata " + imds.url,
                                  [imds] { return FetchImdsCredentials(imds); });
  if (!found.ok()) {
    REELFS_LOG_DEBUG("s3", "no credentials from EC2 instance metadata: {}", found.message());
    out.credentials = {};
    out.credentials_source.clear();
  }
  return out;
}

std::string DescribeCredentials(const Credentials& creds) {
  if (creds.empty()) return "(no credentials)";
  const std::string& id = creds.access_key_id;
  // The access key id is not a secret, but showing only its ends is what the AWS CLI does too.
  std::string shown = id.size() > 8 ? id.substr(0, 4) + "..." + id.substr(id.size() - 4) : "****";
  return fmt::format("{} (secret ****, session token: {})", shown,
                     creds.session_token.empty() ? "no" : "yes");
}

}  // namespace reelfs::s3

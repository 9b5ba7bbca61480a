#include "s3/client/aws_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "fmt/format.h"
#include "s3/client/credential_process.h"

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
  // The config file names profiles "[profile NAME]", except the default which may be "[default]".
  std::string config_section = "profile " + out.profile;
  if (out.profile == "default" && config_ini.count(config_section) == 0) {
    config_section = "default";
  }

  // Credentials.
  auto env_key = NonEmpty(env, "AWS_ACCESS_KEY_ID");
  auto env_secret = NonEmpty(env, "AWS_SECRET_ACCESS_KEY");
  if (!explicit_profile && env_key && env_secret) {
    out.credentials.access_key_id = *env_key;
    out.credentials.secret_access_key = *env_secret;
    out.credentials.session_token = NonEmpty(env, "AWS_SESSION_TOKEN").value_or("");
    out.credentials_source = "environment";
  } else {
    const std::pair<const IniSections*, std::pair<std::string, std::string>> files[] = {
        {&credentials_ini, {out.profile, credentials_path}},
        {&config_ini, {config_section, config_path}},
    };
    for (const auto& [ini, where] : files) {
      const std::string* key = Find(*ini, where.first, "aws_access_key_id");
      const std::string* secret = Find(*ini, where.first, "aws_secret_access_key");
      if (key == nullptr || secret == nullptr) continue;
      out.credentials.access_key_id = *key;
      out.credentials.secret_access_key = *secret;
      const std::string* token = Find(*ini, where.first, "aws_session_token");
      out.credentials.session_token = token != nullptr ? *token : "";
      out.credentials_source = fmt::format("{} [{}]", where.second, where.first);
      break;
    }
  }
  if (out.credentials.empty() && !(!explicit_profile && env_key && env_secret)) {
    if (const std::string* command = Find(config_ini, config_section, "credential_process")) {
      REELFS_ASSIGN_OR_RETURN(ProcessCredentials got, RunCredentialProcess(*command));
      out.credentials = std::move(got.credentials);
      out.credentials_expiration = got.expiration;
      out.credentials_source =
          fmt::format("credential_process of {} [{}]", config_path, config_section);
    }
  }
  if (explicit_profile && out.credentials.empty() && credentials_ini.count(out.profile) == 0 &&
      config_ini.count(config_section) == 0) {
    return Status::NotFound(fmt::format("AWS profile '{}' not found in {} or {}", out.profile,
                                        credentials_path, config_path));
  }

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

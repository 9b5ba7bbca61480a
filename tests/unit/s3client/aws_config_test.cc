#include "s3/client/aws_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include <doctest/doctest.h>

#include "s3/client/credential_providers.h"

using namespace reelfs;
using namespace reelfs::s3;
namespace fs = std::filesystem;

namespace {

// A temporary HOME with ~/.aws files, removed at the end.
class TempHome {
 public:
  TempHome() {
    char tmpl[] = "/tmp/reelfs-aws-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / ".aws");
  }
  ~TempHome() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

// Unit tests never reach EC2 instance metadata (169.254.169.254 is not loopback): it is off
// unless a test names it.
EnvLookup Env(std::map<std::string, std::string> vars) {
  vars.emplace("AWS_EC2_METADATA_DISABLED", "true");
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

constexpr const char* kCredentials = R"(# comment
[default]
aws_access_key_id = DEFAULTKEY
aws_secret_access_key = defaultsecret

[dev]
aws_access_key_id=DEVKEY
aws_secret_access_key=devsecret
aws_session_token = devtoken
)";

constexpr const char* kConfig = R"(
[default]
region = eu-west-1

[profile dev]
region = ap-south-1
s3 =
  endpoint_url = http://127.0.0.1:7070
  addressing_style = path

[profile  cfgonly]
aws_access_key_id = CFGKEY
aws_secret_access_key = cfgsecret
endpoint_url = http://example:9000
; another comment
)";

}  // namespace

TEST_CASE("ParseIni: sections, comments, nested properties, errors") {
  auto ini = ParseIni(kConfig);
  REQUIRE(ini.ok());
  CHECK((*ini)["default"]["region"] == "eu-west-1");
  CHECK((*ini)["profile dev"]["s3.endpoint_url"] == "http://127.0.0.1:7070");
  CHECK((*ini)["profile dev"]["s3.addressing_style"] == "path");
  CHECK((*ini)["profile cfgonly"]["endpoint_url"] == "http://example:9000");
  CHECK(ParseIni("[x\nk=v").status().code() == StatusCode::kInvalidArgument);
  CHECK(ParseIni("k=v\n").status().code() == StatusCode::kInvalidArgument);  // outside a section
  CHECK(ParseIni("[s]\njunk\n").status().code() == StatusCode::kInvalidArgument);
  CHECK(ParseIni("").ok());
  auto keys = ParseIni("[S]\nAWS_Access_Key_ID = X\n");
  REQUIRE(keys.ok());
  CHECK((*keys)["S"]["aws_access_key_id"] == "X");
}

TEST_CASE("nothing configured: defaults") {
  TempHome home;
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()}}));
  REQUIRE(s.ok());
  CHECK(s->credentials.empty());
  CHECK(s->region == "us-east-1");
  CHECK(s->endpoint_url.empty());
  CHECK(s->profile == "default");
}

TEST_CASE("default profile from files") {
  TempHome home;
  home.Write(".aws/credentials", kCredentials);
  home.Write(".aws/config", kConfig);
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()}}));
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "DEFAULTKEY");
  CHECK(s->credentials.secret_access_key == "defaultsecret");
  CHECK(s->region == "eu-west-1");
  CHECK(s->credentials_source.find("[default]") != std::string::npos);
}

TEST_CASE("AWS_PROFILE selects [name] in credentials and [profile name] in config") {
  TempHome home;
  home.Write(".aws/credentials", kCredentials);
  home.Write(".aws/config", kConfig);
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_PROFILE", "dev"}}));
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "DEVKEY");
  CHECK(s->credentials.session_token == "devtoken");
  CHECK(s->region == "ap-south-1");
  CHECK(s->endpoint_url == "http://127.0.0.1:7070");
  // Credentials only in the config file.
  auto c = ResolveAwsSettings(Env({{"HOME", home.path()}}), "cfgonly");
  REQUIRE(c.ok());
  CHECK(c->credentials.access_key_id == "CFGKEY");
  CHECK(c->endpoint_url == "http://example:9000");
  CHECK(ResolveAwsSettings(Env({{"HOME", home.path()}}), "nosuch").status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("precedence: environment over files, explicit profile over environment") {
  TempHome home;
  home.Write(".aws/credentials", kCredentials);
  home.Write(".aws/config", kConfig);
  auto env = Env({{"HOME", home.path()},
                  {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                  {"AWS_SECRET_ACCESS_KEY", "envsecret"},
                  {"AWS_SESSION_TOKEN", "envtoken"},
                  {"AWS_PROFILE", "dev"},
                  {"AWS_DEFAULT_REGION", "us-west-1"},
                  {"AWS_ENDPOINT_URL", "http://generic:1"}});
  auto s = ResolveAwsSettings(env);
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "ENVKEY");
  CHECK(s->credentials.session_token == "envtoken");
  CHECK(s->credentials_source == "environment");
  CHECK(s->region == "us-west-1");
  CHECK(s->endpoint_url == "http://generic:1");
  auto explicit_profile = ResolveAwsSettings(env, "dev");
  REQUIRE(explicit_profile.ok());
  CHECK(explicit_profile->credentials.access_key_id == "DEVKEY");

  auto specific = Env({{"HOME", home.path()},
                       {"AWS_REGION", "ca-central-1"},
                       {"AWS_DEFAULT_REGION", "us-west-1"},
                       {"AWS_ENDPOINT_URL", "http://generic:1"},
                       {"AWS_ENDPOINT_URL_S3", "http://s3specific:2"}});
  auto sp = ResolveAwsSettings(specific);
  REQUIRE(sp.ok());
  CHECK(sp->region == "ca-central-1");
  CHECK(sp->endpoint_url == "http://s3specific:2");
  // Only a key id in the environment is not a credential pair: the files are used.
  auto half = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_ACCESS_KEY_ID", "ONLYKEY"}}));
  REQUIRE(half.ok());
  CHECK(half->credentials.access_key_id == "DEFAULTKEY");
}

TEST_CASE("AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE move the files") {
  TempHome home;
  home.Write("creds", "[default]\naws_access_key_id=MOVED\naws_secret_access_key=s\n");
  home.Write("conf", "[default]\nregion=sa-east-1\n");
  auto s = ResolveAwsSettings(Env({{"HOME", "/nonexistent"},
                                   {"AWS_SHARED_CREDENTIALS_FILE", home.path() + "/creds"},
                                   {"AWS_CONFIG_FILE", home.path() + "/conf"}}));
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "MOVED");
  CHECK(s->region == "sa-east-1");
}

TEST_CASE("AWS_CA_BUNDLE, else the profile's ca_bundle, names the trusted CAs") {
  TempHome home;
  home.Write("conf", "[default]\nca_bundle=/etc/site-ca.pem\n[profile other]\nregion=x\n");
  auto from_config = ResolveAwsSettings(
      Env({{"HOME", "/nonexistent"}, {"AWS_CONFIG_FILE", home.path() + "/conf"}}));
  REQUIRE(from_config.ok());
  CHECK(from_config->ca_bundle == "/etc/site-ca.pem");
  auto env_wins = ResolveAwsSettings(Env({{"HOME", "/nonexistent"},
                                          {"AWS_CONFIG_FILE", home.path() + "/conf"},
                                          {"AWS_CA_BUNDLE", "/tmp/ca.pem"}}));
  REQUIRE(env_wins.ok());
  CHECK(env_wins->ca_bundle == "/tmp/ca.pem");
  auto other = ResolveAwsSettings(
      Env({{"HOME", "/nonexistent"}, {"AWS_CONFIG_FILE", home.path() + "/conf"}}), "other");
  REQUIRE(other.ok());
  CHECK(other->ca_bundle.empty());
}

TEST_CASE("ProcessEnvironment reads the real environment (restored afterwards)") {
  const char* old = std::getenv("AWS_REGION");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  REQUIRE(setenv("AWS_REGION", "xx-test-1", 1) == 0);
  CHECK(ProcessEnvironment()("AWS_REGION") == std::optional<std::string>("xx-test-1"));
  if (saved) {
    setenv("AWS_REGION", saved->c_str(), 1);
  } else {
    unsetenv("AWS_REGION");
  }
  CHECK(ProcessEnvironment()("REELFS_SURELY_UNSET_VARIABLE") == std::nullopt);
}

TEST_CASE("credential_process: run for a profile without keys; its JSON is checked") {
  TempHome home;
  home.Write(".aws/config", R"([profile proc]
credential_process = printf '{"Version": 1, "AccessKeyId": "PROCKEY", "SecretAccessKey": "procsecret", "SessionToken": "tok", "Expiration": "2030-01-02T03:04:05Z"}'
region = eu-west-1
[profile failing]
credential_process = sh -c 'echo no >&2; exit 3'
[profile badjson]
credential_process = echo not-json
[profile version2]
credential_process = echo '{"Version": 2, "AccessKeyId": "K", "SecretAccessKey": "S"}'
)");
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_PROFILE", "proc"}}));
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->credentials.access_key_id == "PROCKEY");
  CHECK(s->credentials.secret_access_key == "procsecret");
  CHECK(s->credentials.session_token == "tok");
  CHECK(s->credentials_source.starts_with("credential_process of "));
  REQUIRE(s->credentials_expiration.has_value());
  // Expiring credentials come with the way to fetch them again: the program, run anew.
  REQUIRE(s->refresh);
  auto again = s->refresh();
  REQUIRE(again.ok());
  CHECK(again->credentials.access_key_id == "PROCKEY");
  CHECK(std::chrono::system_clock::to_time_t(*s->credentials_expiration) == 1893553445);
  CHECK(s->region == "eu-west-1");
  // The environment's keys win, as in the SDKs (the process is not run).
  s = ResolveAwsSettings(Env({{"HOME", home.path()},
                              {"AWS_PROFILE", "failing"},
                              {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                              {"AWS_SECRET_ACCESS_KEY", "envsecret"}}));
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "ENVKEY");
  // A failing program, malformed output, another Version: errors that name the command.
  s = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_PROFILE", "failing"}}));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("exited with status 3") != std::string_view::npos);
  s = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_PROFILE", "badjson"}}));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("not a JSON object") != std::string_view::npos);
  s = ResolveAwsSettings(Env({{"HOME", home.path()}, {"AWS_PROFILE", "version2"}}));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("\"Version\" must be 1") != std::string_view::npos);
  CHECK(s.status().message().find("echo") != std::string_view::npos);  // the command is named
}

TEST_CASE("role profiles: mistakes are errors naming the file, before any request") {
  TempHome home;
  home.Write(".aws/config", R"([profile nosource]
role_arn = arn:aws:iam::123456789012:role/r
[profile loop1]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = loop2
[profile loop2]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = loop1
[profile emptysource]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = nokeys
[profile nokeys]
region = eu-west-1
[profile ec2source]
role_arn = arn:aws:iam::123456789012:role/r
credential_source = Ec2InstanceMetadata
[profile badduration]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = keys
duration_seconds = 60
[profile keys]
aws_access_key_id = K
aws_secret_access_key = S
)");
  auto resolve = [&](const char* profile) {
    return ResolveAwsSettings(Env({{"HOME", home.path()}}), profile);
  };
  auto s = resolve("nosource");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("needs source_profile") != std::string_view::npos);
  CHECK(s.status().message().find("[profile nosource]") != std::string_view::npos);
  s = resolve("loop1");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("a cycle?") != std::string_view::npos);
  s = resolve("emptysource");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kUnauthenticated);
  s = resolve("ec2source");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("not supported") != std::string_view::npos);
  s = resolve("badduration");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("duration_seconds") != std::string_view::npos);
  // Static keys alone: no refresher.
  s = resolve("keys");
  REQUIRE(s.ok());
  CHECK(s->credentials.access_key_id == "K");
  CHECK_FALSE(s->refresh);
}

TEST_CASE("container credentials: clear text only to loopback and the link-local agents") {
  TempHome home;
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()},
                                   {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds"},
                                   {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token"}}));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kInvalidArgument);
  CHECK(s.status().message().find("plain http") != std::string_view::npos);
  CHECK(s.status().message().find("secret-token") == std::string_view::npos);
  CHECK(CheckContainerUrl("http://127.0.0.1:9/creds").ok());
  CHECK(CheckContainerUrl("http://169.254.170.23/v1/credentials").ok());
  CHECK(CheckContainerUrl("https://creds.example.com/x").ok());
  CHECK_FALSE(CheckContainerUrl("ftp://127.0.0.1/creds").ok());
}

TEST_CASE("an explicit profile does not fall through to containers or instance metadata") {
  TempHome home;
  home.Write(".aws/config", "[profile bare]\nregion = eu-west-1\n");
  // Were the container provider consulted, this URL would be refused as clear text.
  auto s = ResolveAwsSettings(
      Env({{"HOME", home.path()}, {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/c"}}),
      "bare");
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->credentials.empty());
  CHECK(s->region == "eu-west-1");
}

TEST_CASE("the STS endpoint: AWS_ENDPOINT_URL_STS, else regional") {
  CHECK(DefaultStsUrl("eu-west-1") == "https://sts.eu-west-1.amazonaws.com");
  CHECK(DefaultStsUrl("") == "https://sts.us-east-1.amazonaws.com");
  // A web identity token file that cannot be read is an error naming the file, before STS.
  TempHome home;
  auto s = ResolveAwsSettings(Env({{"HOME", home.path()},
                                   {"AWS_WEB_IDENTITY_TOKEN_FILE", home.path() + "/missing"},
                                   {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r"},
                                   {"AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9"}}));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("/missing") != std::string_view::npos);
}

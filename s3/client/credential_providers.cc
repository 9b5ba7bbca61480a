#include "s3/client/credential_providers.h"

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/strings.h"
#include "s3/client/curl_handles.h"
#include "s3/client/curl_status.h"
#include "s3/client/request_target.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {
namespace {

constexpr size_t kMaxAnswer = 64 * 1024;  // a credentials document is a few hundred bytes
constexpr std::string_view kStsVersion = "2011-06-15";

struct Answer {
  long status = 0;
  std::string body;
};

size_t Collect(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() + n > kMaxAnswer) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  body->append(data, n);
  return n;
}

struct Exchange {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "name: value"
  std::string body;
  std::chrono::milliseconds timeout{10'000};
  std::string ca_bundle;
  bool direct = false;  // link-local metadata services are never reached through a proxy
};

// One blocking HTTP exchange. `what` prefixes errors ("STS AssumeRole").
Result<Answer> Perform(const Exchange& ex, std::string_view what) {
  CurlGlobal global;
  REELFS_RETURN_IF_ERROR(global.status());
  CurlEasy easy(curl_easy_init());
  if (!easy) return Status::ResourceExhausted(fmt::format("{}: curl_easy_init failed", what));
  CurlSlist headers;
  for (const std::string& h : ex.headers) {
    if (!AppendHeader(headers, h)) return Status::ResourceExhausted("curl_slist_append");
  }
  if (!AppendHeader(headers, "Expect:")) return Status::ResourceExhausted("curl_slist_append");
  Answer answer;
  char error[CURL_ERROR_SIZE] = {};
  CURL* h = easy.get();
  curl_easy_setopt(h, CURLOPT_URL, ex.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(ex.timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(ex.timeout.count()));
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_USERAGENT, "reelfs/0.1");
  if (ex.method == "POST" || ex.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, ex.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(ex.body.size()));
    if (ex.method == "PUT") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  }
  if (!ex.ca_bundle.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, ex.ca_bundle.c_str());
  if (ex.direct) curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    const Status s = CurlToStatus(rc, error);
    return Status(s.code(), s.reason(), fmt::format("{} ({}): {}", what, ex.url, s.message()));
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

std::string ReadSmallFile(const std::string& path, Status* error, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = Status::NotFound(fmt::format("{}: cannot read {}", what, path));
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return std::string(Trim(text.str(), " \t\r\n"));
}

Result<TemporaryCredentials> StsAnswer(const Result<Answer>& answer, std::string_view action) {
  if (!answer.ok()) return answer.status();
  if (answer->status / 100 != 2) return StsErrorToStatus(answer->status, answer->body, action);
  return ParseStsCredentials(answer->body, action);
}

}  // namespace

std::string DefaultStsUrl(const std::string& region) {
  return fmt::format("https://sts.{}.amazonaws.com", region.empty() ? "us-east-1" : region);
}

Result<TemporaryCredentials> AssumeRoleWithWebIdentity(const StsEndpoint& sts,
                                                       const std::string& role_arn,
                                                       const std::string& session_name,
                                                       const std::string& token_file) {
  constexpr std::string_view kAction = "AssumeRoleWithWebIdentity";
  Status read_error;
  const std::string token = ReadSmallFile(token_file, &read_error, "web identity token file");
  REELFS_RETURN_IF_ERROR(read_error);
  if (token.empty()) {
    return Status::InvalidArgument(fmt::format("web identity token file {} is empty", token_file));
  }
  Exchange ex;
  ex.method = "POST";
  ex.url = sts.url;
  ex.timeout = sts.timeout;
  ex.ca_bundle = sts.ca_bundle;
  ex.headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                "Accept: text/xml"};
  // Unsigned: the token is the proof (the SDKs send this call without SigV4 too).
  ex.body = EncodeForm({{"Action", std::string(kAction)},
                        {"Version", std::string(kStsVersion)},
                        {"RoleArn", role_arn},
                        {"RoleSessionName", session_name},
                        {"WebIdentityToken", token}});
  return StsAnswer(Perform(ex, fmt::format("STS {}", kAction)), kAction);
}

Result<TemporaryCredentials> AssumeRole(const StsEndpoint& sts, const Credentials& source,
                                        const AssumeRoleParams& params) {
  constexpr std::string_view kAction = "AssumeRole";
  if (source.empty()) return Status::Unauthenticated("STS AssumeRole: the source has no keys");
  REELFS_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(sts.url));
  std::vector<std::pair<std::string, std::string>> form = {
      {"Action", std::string(kAction)},
      {"Version", std::string(kStsVersion)},
      {"RoleArn", params.role_arn},
      {"RoleSessionName", params.session_name}};
  if (!params.external_id.empty()) form.emplace_back("ExternalId", params.external_id);
  if (params.duration_seconds > 0) {
    form.emplace_back("DurationSeconds", std::to_string(params.duration_seconds));
  }
  Exchange ex;
  ex.method = "POST";
  ex.url = sts.url;
  ex.timeout = sts.timeout;
  ex.ca_bundle = sts.ca_bundle;
  ex.body = EncodeForm(form);

  SignableRequest req;
  req.method = "POST";
  req.encoded_path = endpoint.base_path.empty() ? "/" : endpoint.base_path + "/";
  const bool default_port = endpoint.port == 0 ||
                            (endpoint.scheme == "http" && endpoint.port == 80) ||
                            (endpoint.scheme == "https" && endpoint.port == 443);
  req.headers = {
      {"host", default_port ? endpoint.host : fmt::format("{}:{}", endpoint.host, endpoint.port)},
      {"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  req.payload_hash = Sha256Hex(ex.body);
  SigV4Params sig;
  sig.region = sts.region.empty() ? "us-east-1" : sts.region;
  sig.service = "sts";
  sig.time = std::chrono::system_clock::now();
  sig.s3_uri_rules = false;
  SignRequest(req, source, sig);
  if (ex.url.empty() || ex.url.back() != '/') ex.url += '/';
  for (const auto& [name, value] : req.headers) {
    if (name != "host") ex.headers.push_back(name + ": " + value);
  }
  ex.headers.emplace_back("Accept: text/xml");
  return StsAnswer(Perform(ex, fmt::format("STS {}", kAction)), kAction);
}

Status CheckContainerUrl(const std::string& url) {
  REELFS_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(url));
  if (endpoint.scheme == "https") return Status::Ok();
  const std::string& host = endpoint.host;
  const bool allowed = host == "localhost" || host.starts_with("127.") || host == "[::1]" ||
                       host == "169.254.170.2" || host == "169.254.170.23" ||
                       host == "[fd00:ec2::23]";
  if (allowed) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "container credentials URL {}: plain http is only allowed to loopback, 169.254.170.2, "
      "169.254.170.23 or fd00:ec2::23",
      url));
}

Result<TemporaryCredentials> FetchContainerCredentials(const ContainerEndpoint& endpoint) {
  constexpr std::string_view kWhat = "container credentials endpoint";
  REELFS_RETURN_IF_ERROR(CheckContainerUrl(endpoint.url));
  Exchange ex;
  ex.url = endpoint.url;
  ex.timeout = endpoint.timeout;
  ex.direct = true;
  std::string token = endpoint.auth_token;
  if (!endpoint.auth_token_file.empty()) {
    Status read_error;
    token = ReadSmallFile(endpoint.auth_token_file, &read_error, "container authorization token");
    REELFS_RETURN_IF_ERROR(read_error);
  }
  if (token.find_first_of("\r\n") != std::string::npos) {
    return Status::InvalidArgument("container authorization token holds a line break");
  }
  if (!token.empty()) ex.headers.push_back("Authorization: " + token);
  ex.headers.emplace_back("Accept: application/json");
  REELFS_ASSIGN_OR_RETURN(Answer answer, Perform(ex, kWhat));
  if (answer.status != 200) {
    return Status::PermissionDenied(
        fmt::format("{} {} answered HTTP {}", kWhat, endpoint.url, answer.status));
  }
  return ParseJsonCredentials(answer.body, kWhat);
}

Result<TemporaryCredentials> FetchImdsCredentials(const ImdsEndpoint& endpoint) {
  constexpr std::string_view kWhat = "EC2 instance metadata";
  std::string base = endpoint.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  Exchange token_ex;
  token_ex.method = "PUT";
  token_ex.url = base + "/latest/api/token";
  token_ex.timeout = endpoint.timeout;
  token_ex.direct = true;
  token_ex.headers = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"};
  REELFS_ASSIGN_OR_RETURN(Answer token, Perform(token_ex, kWhat));
  if (token.status != 200 || token.body.empty() ||
      token.body.find_first_of("\r\n") != std::string::npos) {
    return Status::Unavailable(
        fmt::format("{}: no IMDSv2 session token (HTTP {})", kWhat, token.status));
  }
  Exchange ex;
  ex.timeout = endpoint.timeout;
  ex.direct = true;
  ex.headers = {"X-aws-ec2-metadata-token: " + token.body};
  ex.url = base + "/latest/meta-data/iam/security-credentials/";
  REELFS_ASSIGN_OR_RETURN(Answer roles, Perform(ex, kWhat));
  if (roles.status != 200) {
    return Status::NotFound(
        fmt::format("{}: no instance role (HTTP {} listing roles)", kWhat, roles.status));
  }
  const std::string role(Trim(roles.body.substr(0, roles.body.find('\n')), " \t\r"));
  if (role.empty() || role.find_first_of("/?#%") != std::string::npos) {
    return Status::NotFound(fmt::format("{}: no usable instance role name", kWhat));
  }
  ex.url += role;
  REELFS_ASSIGN_OR_RETURN(Answer creds, Perform(ex, kWhat));
  if (creds.status != 200) {
    return Status::Unavailable(
        fmt::format("{}: role {} credentials: HTTP {}", kWhat, role, creds.status));
  }
  return ParseJsonCredentials(creds.body, kWhat);
}

}  // namespace reelfs::s3

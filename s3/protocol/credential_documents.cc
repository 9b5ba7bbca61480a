#include "s3/protocol/credential_documents.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "s3/protocol/time_format.h"
#include "s3/protocol/uri.h"
#include "s3/protocol/xml_internal.h"

namespace reelfs::s3 {
namespace {

using xml_internal::Child;
using xml_internal::ChildText;

// A credential document as long as a page is already hostile; refusing it early keeps the
// parsers' work bounded.
constexpr size_t kMaxDocument = 64 * 1024;

Status Bad(std::string_view source, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{}: {}", source, what));
}

Result<std::chrono::system_clock::time_point> Expiration(std::string_view text,
                                                         std::string_view source) {
  auto t = ParseIso8601(text);
  if (!t.ok()) return Bad(source, fmt::format("Expiration '{}' is not an ISO 8601 time", text));
  return *t;
}

}  // namespace

Result<TemporaryCredentials> ParseStsCredentials(std::string_view xml, std::string_view action) {
  const std::string source = fmt::format("STS {} response", action);
  if (xml.size() > kMaxDocument) return Bad(source, "larger than 64 KiB");
  pugi::xml_document doc;
  auto root = xml_internal::ParseDocument(xml, std::string(action) + "Response", doc);
  if (!root.ok()) return Bad(source, root.status().message());
  const pugi::xml_node result = Child(*root, std::string(action) + "Result");
  if (!result) return Bad(source, fmt::format("no <{}Result>", action));
  const pugi::xml_node creds = Child(result, "Credentials");
  if (!creds) return Bad(source, "no <Credentials>");
  TemporaryCredentials out;
  out.credentials.access_key_id = ChildText(creds, "AccessKeyId");
  out.credentials.secret_access_key = ChildText(creds, "SecretAccessKey");
  out.credentials.session_token = ChildText(creds, "SessionToken");
  if (out.credentials.access_key_id.empty()) return Bad(source, "no <AccessKeyId>");
  if (out.credentials.secret_access_key.empty()) return Bad(source, "no <SecretAccessKey>");
  if (out.credentials.session_token.empty()) return Bad(source, "no <SessionToken>");
  const std::string expiration = ChildText(creds, "Expiration");
  if (expiration.empty()) return Bad(source, "no <Expiration>");
  REELFS_ASSIGN_OR_RETURN(out.expiration, Expiration(expiration, source));
  return out;
}

Status StsErrorToStatus(int http_status, std::string_view body, std::string_view action) {
  std::string code, message;
  if (body.size() <= kMaxDocument) {
    pugi::xml_document doc;
    if (auto root = xml_internal::ParseDocument(body, "ErrorResponse", doc); root.ok()) {
      const pugi::xml_node error = Child(*root, "Error");
      code = ChildText(error, "Code");
      message = ChildText(error, "Message");
    }
  }
  if (code.empty()) code = "(no STS error document)";
  std::string text = fmt::format("STS {}: {}{}{} (HTTP {})", action, code,
                                 message.empty() ? "" : ": ", message, http_status);
  if (code == "SignatureDoesNotMatch" || code == "InvalidClientTokenId" ||
      code == "IncompleteSignature" || code == "MissingAuthenticationToken") {
    return Status::Unauthenticated(std::move(text));
  }
  if (code == "Throttling" || code == "ThrottlingException" || code == "IDPCommunicationError" ||
      http_status >= 500 || http_status == 429) {
    return Status::Unavailable(std::move(text));
  }
  if (code == "ValidationError" || code == "InvalidAction" || code == "MalformedPolicyDocument" ||
      code == "InvalidParameterValue" || code == "MissingParameter") {
    return Status::InvalidArgument(std::move(text));
  }
  return Status::PermissionDenied(std::move(text));
}

Result<TemporaryCredentials> ParseJsonCredentials(std::string_view json, std::string_view source) {
  if (json.size() > kMaxDocument) return Bad(source, "larger than 64 KiB");
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Bad(source, "answer is not a JSON object");
  auto text = [&](const char* key) -> std::string {
    const auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (doc.contains("Code")) {
    const std::string code = text("Code");
    if (code != "Success") return Bad(source, fmt::format("\"Code\" is '{}', not Success", code));
  }
  TemporaryCredentials out;
  out.credentials.access_key_id = text("AccessKeyId");
  out.credentials.secret_access_key = text("SecretAccessKey");
  out.credentials.session_token = text("Token");
  if (out.credentials.access_key_id.empty()) return Bad(source, "no \"AccessKeyId\"");
  if (out.credentials.secret_access_key.empty()) return Bad(source, "no \"SecretAccessKey\"");
  if (const std::string expiration = text("Expiration"); !expiration.empty()) {
    REELFS_ASSIGN_OR_RETURN(out.expiration, Expiration(expiration, source));
  }
  return out;
}

std::string EncodeForm(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += '&';
    out += UriEncode(name, /*keep_slash=*/false);
    out += '=';
    out += UriEncode(value, /*keep_slash=*/false);
  }
  return out;
}

}  // namespace reelfs::s3

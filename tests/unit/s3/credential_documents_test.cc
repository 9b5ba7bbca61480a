// STS and JSON credential documents: what a well-formed answer gives, and that every malformed
// one is a Status that names the problem and never repeats a secret.
#include "s3/protocol/credential_documents.h"

#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/time_format.h"

using namespace reelfs;
using namespace reelfs::s3;

namespace {

std::string Sts(const std::string& action, const std::string& creds) {
  return "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + action +
         "Result><AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn></AssumedRoleUser>"
         "<Credentials>" +
         creds + "</Credentials></" + action + "Result></" + action + "Response>";
}

constexpr const char* kFull =
    "<AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>s3cr3t</SecretAccessKey>"
    "<SessionToken>tok/en+</SessionToken><Expiration>2026-12-05T18:00:00Z</Expiration>";

}  // namespace

TEST_CASE("STS: both actions' answers give the four members") {
  for (const char* action : {"AssumeRole", "AssumeRoleWithWebIdentity"}) {
    auto got = ParseStsCredentials(Sts(action, kFull), action);
    REQUIRE(got.ok());
    CHECK(got->credentials.access_key_id == "ASIAEXAMPLE");
    CHECK(got->credentials.secret_access_key == "s3cr3t");
    CHECK(got->credentials.session_token == "tok/en+");
    REQUIRE(got->expiration);
    CHECK(*got->expiration == *ParseIso8601("2026-12-05T18:00:00Z"));
  }
  // Another action's document is not this one's.
  CHECK_FALSE(ParseStsCredentials(Sts("AssumeRole", kFull), "AssumeRoleWithWebIdentity").ok());
}

TEST_CASE("STS: a missing member or a bad time is refused without echoing a secret") {
  const std::string secret = "<SecretAccessKey>s3cr3t</SecretAccessKey>";
  for (const std::string& creds :
       {std::string("<AccessKeyId>A</AccessKeyId>") + secret +
            "<SessionToken>t</SessionToken>",  // no Expiration
        std::string("<AccessKeyId>A</AccessKeyId><SessionToken>t</SessionToken>"
                    "<Expiration>2026-12-05T18:00:00Z</Expiration>"),  // no secret
        std::string("<AccessKeyId>A</AccessKeyId>") + secret +
            "<SessionToken>t</SessionToken><Expiration>tomorrow</Expiration>",
        std::string("<AccessKeyId>A</AccessKeyId>") + secret +
            "<SessionToken>t</SessionToken><Expiration>4024-01-01T00:00:00Z</Expiration>"}) {
    auto got = ParseStsCredentials(Sts("AssumeRole", creds), "AssumeRole");
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kInvalidArgument);
    CHECK(got.status().message().find("s3cr3t") == std::string::npos);
  }
  CHECK_FALSE(ParseStsCredentials("", "AssumeRole").ok());
  CHECK_FALSE(ParseStsCredentials("<AssumeRoleResponse>", "AssumeRole").ok());
  CHECK_FALSE(
      ParseStsCredentials(std::string(70000, ' ') + Sts("AssumeRole", kFull), "AssumeRole").ok());
}

TEST_CASE("STS errors map to what they mean") {
  auto doc = [](const std::string& code) {
    return "<ErrorResponse><Error><Type>Sender</Type><Code>" + code +
           "</Code><Message>m</Message></Error></ErrorResponse>";
  };
  CHECK(StsErrorToStatus(403, doc("SignatureDoesNotMatch"), "AssumeRole").code() ==
        StatusCode::kUnauthenticated);
  CHECK(StsErrorToStatus(403, doc("InvalidClientTokenId"), "AssumeRole").code() ==
        StatusCode::kUnauthenticated);
  const Status denied =
      StsErrorToStatus(400, doc("InvalidIdentityToken"), "AssumeRoleWithWebIdentity");
  CHECK(denied.code() == StatusCode::kPermissionDenied);
  CHECK(denied.message() == "STS AssumeRoleWithWebIdentity: InvalidIdentityToken: m (HTTP 400)");
  CHECK(StsErrorToStatus(400, doc("ValidationError"), "AssumeRole").code() ==
        StatusCode::kInvalidArgument);
  CHECK(StsErrorToStatus(400, doc("Throttling"), "AssumeRole").code() == StatusCode::kUnavailable);
  CHECK(StsErrorToStatus(503, "not xml", "AssumeRole").code() == StatusCode::kUnavailable);
  const Status bare = StsErrorToStatus(403, "", "AssumeRole");
  CHECK(bare.code() == StatusCode::kPermissionDenied);
  CHECK(bare.message().find("HTTP 403") != std::string::npos);
}

TEST_CASE("JSON credentials: container and IMDS shapes") {
  auto container = ParseJsonCredentials(
      R"({"AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"2026-12-05T18:00:00Z"})",
      "container");
  REQUIRE(container.ok());
  CHECK(container->credentials.session_token == "T");
  CHECK(container->expiration.has_value());
  auto imds = ParseJsonCredentials(
      R"({"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"A","SecretAccessKey":"S","Token":"T",)"
      R"("Expiration":"2026-12-05T18:00:00Z"})",
      "imds");
  REQUIRE(imds.ok());
  CHECK(imds->credentials.access_key_id == "A");
  // Long-term keys from a container endpoint have no Expiration: nothing to refresh.
  auto fixed = ParseJsonCredentials(R"({"AccessKeyId":"A","SecretAccessKey":"S"})", "container");
  REQUIRE(fixed.ok());
  CHECK_FALSE(fixed->expiration.has_value());

  for (const char* bad :
       {"", "[]", "{", R"({"AccessKeyId":"A"})", R"({"AccessKeyId":1,"SecretAccessKey":"S"})",
        R"({"Code":"Failure","AccessKeyId":"A","SecretAccessKey":"S"})",
        R"({"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"})"}) {
    auto got = ParseJsonCredentials(bad, "imds");
    CHECK_FALSE(got.ok());
    CHECK(got.status().message().rfind("imds: ", 0) == 0);
  }
}

TEST_CASE("form bodies are percent-encoded") {
  CHECK(EncodeForm({{"Action", "AssumeRole"}, {"RoleArn", "arn:aws:iam::1:role/a b"}}) ==
        "Action=AssumeRole&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fa%20b");
  CHECK(EncodeForm({}) == "");
}

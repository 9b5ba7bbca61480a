#include "s3/client/redact.h"

#include <doctest/doctest.h>

#include "s3/client/aws_config.h"

using namespace reelfs::s3;

namespace {
constexpr std::string_view kSig =
    "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
bool Contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}
}  // namespace

TEST_CASE("Authorization and security token headers are masked, any case") {
  const std::string text =
      "GET /b/k HTTP/1.1\r\nHost: h\r\n"
      "Authorization: AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/s3/aws4_request, "
      "SignedHeaders=host, Signature=" +
      std::string(kSig) +
      "\r\n"
      "x-amz-security-token: SESSIONSECRET\r\n"
      "X-AMZ-SECURITY-TOKEN: SESSIONSECRET2\r\n"
      "x-amz-date: 20240101T000000Z\r\n";
  const std::string out = RedactSecrets(text);
  CHECK_FALSE(Contains(out, kSig));
  CHECK_FALSE(Contains(out, "SESSIONSECRET"));
  CHECK(Contains(out, "Authorization: <redacted>\r\n"));
  CHECK(Contains(out, "x-amz-date: 20240101T000000Z\r\n"));  // the rest stays useful
  CHECK(Contains(out, "GET /b/k HTTP/1.1\r\n"));
}

TEST_CASE("presigned query secrets are masked, other parameters kept") {
  const std::string line =
      "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20240101%2Fus-east-1"
      "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-Security-Token=TOK&X-Amz-Signature=" +
      std::string(kSig) + " HTTP/1.1";
  const std::string out = RedactSecrets(line);
  CHECK_FALSE(Contains(out, kSig));
  CHECK_FALSE(Contains(out, "AKID"));
  CHECK_FALSE(Contains(out, "TOK&"));
  CHECK(Contains(out, "X-Amz-Expires=60"));
  CHECK(Contains(out, "X-Amz-Signature=<redacted> HTTP/1.1"));
}

TEST_CASE("text without secrets passes unchanged") {
  const std::string text = "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 5\r\n";
  CHECK(RedactSecrets(text) == text);
  // A key that merely contains the words is not a parameter.
  CHECK(RedactSecrets("GET /b/my-x-amz-signature=1") == "GET /b/my-x-amz-signature=1");
}

TEST_CASE("DescribeCredentials never prints the secret or token") {
  Credentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "TOKEN123"};
  const std::string d = DescribeCredentials(c);
  CHECK_FALSE(Contains(d, "wJalr"));
  CHECK_FALSE(Contains(d, "TOKEN123"));
  CHECK(Contains(d, "AKIA"));
  CHECK(Contains(d, "session token: yes"));
  CHECK(DescribeCredentials({}) == "(no credentials)");
}

#include "s3/protocol/sigv4.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common/strings.h"
#include "s3/protocol/crypto.h"
#include "tests/fakes/utc_time.h"

namespace reelfs::s3 {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

using testing::Utc;

// ---- The AWS SigV4 test suite (data/sigv4, see its README.md) ----

const Credentials kSuiteCreds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct SuiteRequest {
  SignableRequest req;
  std::string body;
};

// The suite's .req format: "METHOD TARGET HTTP/1.1", header lines (a line starting with white
// space continues the previous header), a blank line, the body. TARGET may contain spaces.
SuiteRequest ParseSuiteRequest(const std::string& text) {
  SuiteRequest out;
  const size_t blank = text.find("\n\n");
  const std::string head = text.substr(0, blank);
  if (blank != std::string::npos) out.body = text.substr(blank + 2);
  std::istringstream lines(head);
  std::string line;
  std::getline(lines, line);
  const size_t first_space = line.find(' ');
  const size_t last_space = line.rfind(' ');
  out.req.method = line.substr(0, first_space);
  const std::string target = line.substr(first_space + 1, last_space - first_space - 1);
  const size_t q = target.find('?');
  out.req.encoded_path = target.substr(0, q);
  if (q != std::string::npos) out.req.raw_query = target.substr(q + 1);
  while (std::getline(lines, line)) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t') && !out.req.headers.empty()) {
      out.req.headers.back().second += " " + line;
      continue;
    }
    const size_t colon = line.find(':');
    out.req.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  return out;
}

std::string HeaderValue(const SignableRequest& req, std::string_view lower_name) {
  for (const auto& [n, v] : req.headers) {
    if (Lower(n) == lower_name) return v;
  }
  return {};
}

std::filesystem::path VectorsDir() {
  const char* env = std::getenv("REELFS_SIGV4_VECTORS");
  if (env != nullptr && *env != '\0') return std::filesystem::path(env);
#ifdef REELFS_SIGV4_VECTORS_DEFAULT
  return std::filesystem::path(REELFS_SIGV4_VECTORS_DEFAULT);
#else
  return std::filesystem::path();
#endif
}

TEST_SUITE("s3") {
  TEST_CASE("sigv4: every AWS test-suite vector (canonical request, string to sign, authz)") {
    const std::filesystem::path dir = VectorsDir();
    REQUIRE_MESSAGE(!dir.empty(), "REELFS_SIGV4_VECTORS is not set (run through ctest)");
    REQUIRE(std::filesystem::is_directory(dir));
    const SigV4Params params{.region = "us-east-1",
                             .service = "service",
                             .time = Utc(2015, 8, 30, 12, 36, 0),
                             .s3_uri_rules = false};
    int cases = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_directory()) continue;
      const std::string name = entry.path().filename().string();
      const auto file = [&](const char* ext) { return entry.path() / (name + ext); };
      CAPTURE(name);
      SuiteRequest parsed = ParseSuiteRequest(ReadFile(file(".req")));
      SignableRequest& req = parsed.req;
      req.payload_hash = Sha256Hex(parsed.body);

      std::vector<std::string> names;
      for (const auto& [n, v] : req.headers) names.push_back(n);
      const std::string creq = CanonicalRequest(req, names, params);
      CHECK(creq == ReadFile(file(".creq")));
      CHECK(StringToSign(creq, params) == ReadFile(file(".sts")));

      // SignRequest signs every header present, which is what the suite's .authz does.
      SignableRequest signed_req = req;
      SignRequest(signed_req, kSuiteCreds, params);
      CHECK(HeaderValue(signed_req, "authorization") == ReadFile(file(".authz")));

      // The verifier accepts what the suite says is correctly signed.
      const SecretLookup lookup = [](std::string_view key) -> std::optional<std::string> {
        if (key == kSuiteCreds.access_key_id) return kSuiteCreds.secret_access_key;
        return std::nullopt;
      };
      SignableRequest wire = req;
      wire.headers.emplace_back("Authorization", ReadFile(file(".authz")));
      Result<VerifiedRequest> verified = VerifyRequest(wire, lookup, params.time);
      CHECK_MESSAGE(verified.ok(), verified.status().ToString());
      ++cases;
    }
    CHECK(cases >= 20);
  }

  TEST_CASE("sigv4: FormatAmzDate and SigningKey") {
    CHECK(FormatAmzDate(Utc(2015, 8, 30, 12, 36, 0)) == "20150830T123600Z");
    CHECK(FormatAmzDate(Utc(2013, 5, 24) + 999ms) == "20130524T000000Z");
    // The worked example of "Deriving the signing key" in the SigV4 documentation.
    CHECK(HexEncode(SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1",
                               "iam")) ==
          "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
  }

  // ---- S3 known answers: the examples of the Amazon S3 SigV4 documentation ----

  const Credentials kS3DocCreds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};
  const SigV4Params kS3DocParams{
      .region = "us-east-1", .service = "s3", .time = Utc(2013, 5, 24), .s3_uri_rules = true};
  constexpr std::string_view kS3DocHost = "examplebucket.s3.amazonaws.com";
  constexpr std::string_view kS3DocScope =
      "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";

  // The Authorization header the S3 documentation shows for its examples' keys and scope.
  std::string DocAuthorization(std::string_view signed_headers, std::string_view signature) {
    return "AWS4-HMAC-SHA256 Credential=" + std::string(kS3DocScope) +
           ", SignedHeaders=" + std::string(signed_headers) +
           ", Signature=" + std::string(signature);
  }

  std::optional<std::string> S3DocLookup(std::string_view key) {
    if (key == kS3DocCreds.access_key_id) return kS3DocCreds.secret_access_key;
    return std::nullopt;
  }

  TEST_CASE("sigv4: S3 GET object with Range (documentation example)") {
    SignableRequest req{.method = "GET",
                        .encoded_path = "/test.txt",
                        .raw_query = "",
                        .headers = {{"Host", std::string(kS3DocHost)}, {"Range", "bytes=0-9"}},
                        .payload_hash = ""};
    SignRequest(req, kS3DocCreds, kS3DocParams);
    CHECK(HeaderValue(req, "x-amz-date") == "20130524T000000Z");
    CHECK(HeaderValue(req, "x-amz-content-sha256") == kEmptyPayloadSha256);
    CHECK(HeaderValue(req, "authorization") ==
          DocAuthorization("host;range;x-amz-content-sha256;x-amz-date",
                           "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));

    Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 24, 0, 5));
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    CHECK(v->access_key_id == "AKIAIOSFODNN7EXAMPLE");
    CHECK_FALSE(v->presigned);
    CHECK(v->payload_hash == kEmptyPayloadSha256);
  }

  TEST_CASE("sigv4: S3 PUT object (documentation example)") {
    // The body hash is itself part of the example.
    CHECK(Sha256Hex("Welcome to Amazon S3.") ==
          "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    SignableRequest req{.method = "PUT",
                        .encoded_path = "/test%24file.text",
                        .raw_query = "",
                        .headers = {{"Host", std::string(kS3DocHost)},
                                    {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                                    {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
                        .payload_hash = Sha256Hex("Welcome to Amazon S3.")};
    SignRequest(req, kS3DocCreds, kS3DocParams);
    CHECK(HeaderValue(req, "authorization") ==
          DocAuthorization("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                           "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"));
  }

  TEST_CASE("sigv4: S3 GET bucket, list and lifecycle (documentation examples)") {
    // The lifecycle query is a parameter without a value.
    const std::pair<std::string_view, std::string_view> examples[] = {
        {"max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
        {"lifecycle", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    };
    for (const auto& example : examples) {
      // Not a structured binding: clang 14 cannot capture one (CAPTURE's lambda).
      const std::string_view query = example.first;
      const std::string_view signature = example.second;
      CAPTURE(query);
      SignableRequest req{.method = "GET",
                          .encoded_path = "/",
                          .raw_query = std::string(query),
                          .headers = {{"Host", std::string(kS3DocHost)}},
                          .payload_hash = ""};
      SignRequest(req, kS3DocCreds, kS3DocParams);
      CHECK(HeaderValue(req, "authorization") ==
            DocAuthorization("host;x-amz-content-sha256;x-amz-date", signature));
    }
  }

  constexpr std::string_view kDocPresignedQuery =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"
      "east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
      "SignedHeaders=host&X-Amz-Signature="
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

  TEST_CASE("sigv4: S3 presigned URL (documentation example)") {
    const SignableRequest req{.method = "GET",
                              .encoded_path = "/test.txt",
                              .raw_query = "",
                              .headers = {{"Host", std::string(kS3DocHost)}},
                              .payload_hash = ""};
    Result<std::string> q = PresignQuery(req, kS3DocCreds, kS3DocParams, 86400s);
    REQUIRE(q.ok());
    CHECK(*q == kDocPresignedQuery);
  }

  TEST_CASE("sigv4: verifying the documentation's presigned URL") {
    SignableRequest req{.method = "GET",
                        .encoded_path = "/test.txt",
                        .raw_query = std::string(kDocPresignedQuery),
                        .headers = {{"host", std::string(kS3DocHost)}, {"user-agent", "curl"}},
                        .payload_hash = ""};
    SUBCASE("inside its lifetime") {
      Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 24, 23, 0));
      REQUIRE_MESSAGE(v.ok(), v.status().ToString());
      CHECK(v->presigned);
      CHECK(v->payload_hash == kUnsignedPayload);
    }
    SUBCASE("after X-Amz-Expires") {
      Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 25, 0, 0, 1));
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kPermissionDenied);
      CHECK(v.status().detail().s3_code == "AccessDenied");
      CHECK(v.status().message() == "Request has expired");
    }
    SUBCASE("another path") {
      req.encoded_path = "/other.txt";
      Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 24, 1, 0));
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kUnauthenticated);
      CHECK(v.status().detail().s3_code == "SignatureDoesNotMatch");
    }
    SUBCASE("an added query parameter") {
      req.raw_query += "&response-content-type=text%2Fhtml";
      Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 24, 1, 0));
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().detail().s3_code == "SignatureDoesNotMatch");
    }
    SUBCASE("without X-Amz-Expires") {
      req.raw_query =
          "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F"
          "20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-"
          "SignedHeaders=host&X-Amz-Signature=" +
          std::string(64, 'a');
      Result<VerifiedRequest> v = VerifyRequest(req, S3DocLookup, Utc(2013, 5, 24, 1, 0));
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kInvalidArgument);
      CHECK(v.status().detail().s3_code == "AuthorizationQueryParametersError");
    }
  }

  // ---- Round trips and hostile input on the gateway side ----

  const Credentials kGwCreds{"GWKEY", "gateway-secret", ""};
  std::optional<std::string> GwLookup(std::string_view key) {
    if (key == "GWKEY") return std::string("gateway-secret");
    return std::nullopt;
  }
  const system_clock::time_point kNow = Utc(2026, 3, 1, 10, 0, 0);
  const SigV4Params kGwParams{
      .region = "us-east-1", .service = "s3", .time = kNow, .s3_uri_rules = true};

  SignableRequest GwRequest() {
    return SignableRequest{.method = "GET",
                           .encoded_path = "/bucket/dir/a%20b%2Bc.bin",
                           .raw_query = "partNumber=1&uploadId=x%2By",
                           .headers = {{"Host", "127.0.0.1:7070"},
                                       {"Range", "bytes=0-99"},
                                       {"Content-MD5", "  1B2M2Y8AsgTpgAmY7PhCfg==  "}},
                           .payload_hash = ""};
  }

  TEST_CASE("sigv4: sign then verify, and what breaks it") {
    SignableRequest req = GwRequest();
    SignRequest(req, kGwCreds, kGwParams);
    REQUIRE(VerifyRequest(req, GwLookup, kNow).ok());

    SUBCASE("an unsigned header added later does not matter") {
      req.headers.emplace_back("User-Agent", "curl/7.88");
      CHECK(VerifyRequest(req, GwLookup, kNow).ok());
    }
    SUBCASE("header names arrive in another case and order") {
      std::reverse(req.headers.begin(), req.headers.end());
      for (auto& [n, v] : req.headers) {
        for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      CHECK(VerifyRequest(req, GwLookup, kNow).ok());
    }
    SUBCASE("the path sent with legal characters left unescaped") {
      SignableRequest r = GwRequest();
      r.encoded_path = "/bucket/a%3Ab%28c%29";
      SignRequest(r, kGwCreds, kGwParams);
      r.encoded_path = "/bucket/a:b(c)";
      CHECK(VerifyRequest(r, GwLookup, kNow).ok());
    }
    SUBCASE("a changed signed header") {
      for (auto& [n, v] : req.headers) {
        if (n == "Range") v = "bytes=0-100";
      }
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kUnauthenticated);
      CHECK(v.status().detail().s3_code == "SignatureDoesNotMatch");
    }
    SUBCASE("a changed query") {
      req.raw_query = "partNumber=2&uploadId=x%2By";
      CHECK(VerifyRequest(req, GwLookup, kNow).status().detail().s3_code ==
            "SignatureDoesNotMatch");
    }
    SUBCASE("another secret") {
      const SecretLookup wrong = [](std::string_view) { return std::optional<std::string>("x"); };
      CHECK(VerifyRequest(req, wrong, kNow).status().detail().s3_code == "SignatureDoesNotMatch");
    }
    SUBCASE("an unknown key") {
      const SecretLookup none = [](std::string_view) { return std::optional<std::string>(); };
      Result<VerifiedRequest> v = VerifyRequest(req, none, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kUnauthenticated);
      CHECK(v.status().detail().s3_code == "InvalidAccessKeyId");
    }
    SUBCASE("a clock too far off") {
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow + 16min);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kPermissionDenied);
      CHECK(v.status().detail().s3_code == "RequestTimeTooSkewed");
      CHECK(VerifyRequest(req, GwLookup, kNow - 14min).ok());
    }
  }

  TEST_CASE("sigv4: the payload claim is returned as signed") {
    for (const std::string& claim :
         {std::string(kUnsignedPayload), std::string("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
          Sha256Hex("hello")}) {
      CAPTURE(claim);
      SignableRequest req = GwRequest();
      req.method = "PUT";
      req.payload_hash = claim;
      SignRequest(req, kGwCreds, kGwParams);
      CHECK(HeaderValue(req, "x-amz-content-sha256") == claim);
      req.payload_hash.clear();  // the gateway does not know the body hash up front
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_MESSAGE(v.ok(), v.status().ToString());
      CHECK(v->payload_hash == claim);
    }
  }

  TEST_CASE("sigv4: VerifyOptions pins the credential scope's region and service") {
    SignableRequest req = GwRequest();
    SignRequest(req, kGwCreds, kGwParams);
    const std::string region = kGwParams.region;
    CHECK(VerifyRequest(req, GwLookup, kNow, VerifyOptions{.expected_region = region}).ok());
    CHECK(VerifyRequest(req, GwLookup, kNow, VerifyOptions{}).ok());  // empty: any scope

    Result<VerifiedRequest> wrong =
        VerifyRequest(req, GwLookup, kNow, VerifyOptions{.expected_region = "eu-west-9"});
    CHECK(wrong.status().code() == StatusCode::kInvalidArgument);
    CHECK(wrong.status().detail().s3_code == "AuthorizationHeaderMalformed");
    CHECK(wrong.status().detail().http_status == 400);
    CHECK(wrong.status().message().find("eu-west-9") != std::string_view::npos);

    Result<VerifiedRequest> service =
        VerifyRequest(req, GwLookup, kNow, VerifyOptions{.expected_service = "sqs"});
    CHECK(service.status().detail().s3_code == "AuthorizationHeaderMalformed");

    SignableRequest get = GwRequest();
    Result<std::string> q = PresignQuery(get, kGwCreds, kGwParams, 3600s);
    REQUIRE(q.ok());
    get.raw_query = *q;
    CHECK(VerifyRequest(get, GwLookup, kNow, VerifyOptions{.expected_region = region}).ok());
    CHECK(VerifyRequest(get, GwLookup, kNow, VerifyOptions{.expected_region = "eu-west-9"})
              .status()
              .detail()
              .s3_code == "AuthorizationQueryParametersError");
    // max_skew still applies through the options.
    CHECK_FALSE(VerifyRequest(req, GwLookup, kNow + 2min,
                              VerifyOptions{.max_skew = std::chrono::seconds(60)})
                    .ok());
  }

  TEST_CASE("sigv4: SignRequest with a precomputed signing key signs identically") {
    SignableRequest a = GwRequest();
    SignableRequest b = GwRequest();
    SignRequest(a, kGwCreds, kGwParams);
    SignRequest(b, kGwCreds, kGwParams,
                SigningKey(kGwCreds.secret_access_key, FormatAmzDate(kNow).substr(0, 8),
                           kGwParams.region, kGwParams.service));
    CHECK(HeaderValue(a, "authorization") == HeaderValue(b, "authorization"));
    CHECK(VerifyRequest(b, GwLookup, kNow).ok());
  }

  TEST_CASE("sigv4: session token is signed in the header and in presigned URLs") {
    const Credentials creds{"GWKEY", "gateway-secret", "TOKEN/with+chars="};
    SignableRequest req = GwRequest();
    SignRequest(req, creds, kGwParams);
    CHECK(HeaderValue(req, "x-amz-security-token") == "TOKEN/with+chars=");
    CHECK(HeaderValue(req, "authorization").find("x-amz-security-token") != std::string::npos);
    CHECK(VerifyRequest(req, GwLookup, kNow).ok());

    SignableRequest get = GwRequest();
    Result<std::string> q = PresignQuery(get, creds, kGwParams, 3600s);
    REQUIRE(q.ok());
    CHECK(q->find("X-Amz-Security-Token=TOKEN%2Fwith%2Bchars%3D") != std::string::npos);
    CHECK(q->find("partNumber=1") != std::string::npos);
    get.raw_query = *q;
    Result<VerifiedRequest> v = VerifyRequest(get, GwLookup, kNow + 10min);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    CHECK(v->presigned);
    CHECK_FALSE(VerifyRequest(get, GwLookup, kNow + 3601s).ok());
  }

  TEST_CASE("sigv4: presign rejects what AWS rejects") {
    const SignableRequest req = GwRequest();
    CHECK(PresignQuery(req, kGwCreds, kGwParams, 0s).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK_FALSE(PresignQuery(req, kGwCreds, kGwParams, 604801s).ok());
    CHECK(PresignQuery(req, kGwCreds, kGwParams, 604800s).ok());
    SignableRequest no_host = req;
    no_host.headers.clear();
    CHECK_FALSE(PresignQuery(no_host, kGwCreds, kGwParams, 60s).ok());
  }

  TEST_CASE("sigv4: hostile Authorization headers fail cleanly") {
    struct Case {
      std::string auth;
      std::string s3_code;
    };
    const std::string cred = "Credential=GWKEY/20260301/us-east-1/s3/aws4_request";
    const std::string sig = "Signature=" + std::string(64, 'a');
    const std::vector<Case> cases = {
        {"", "AccessDenied"},
        {"garbage", "AccessDenied"},
        {"AWS GWKEY:abc", "AccessDenied"},
        {"AWS4-HMAC-SHA256x Credential=a", "AccessDenied"},
        {"AWS4-HMAC-SHA256", "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 ", "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred, "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host", "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=range, " + sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;;x, " + sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host, Signature=xyz",
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", " + cred + ", SignedHeaders=host, " + sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=GWKEY/2026/us-east-1/s3/aws4_request, SignedHeaders=host, " +
             sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=GWKEY/20260301/us-east-1/s3/aws4_request/x, "
         "SignedHeaders=host, " +
             sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=/20260301/us-east-1/s3/aws4_request, SignedHeaders=host, " +
             sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=GWKEY/20260302/us-east-1/s3/aws4_request, "
         "SignedHeaders=host, " +
             sig,
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 ====,,,,;;;;", "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + std::string(100000, 'x'), "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=" + std::string(20000, ';') + ", " + sig,
         "AuthorizationHeaderMalformed"},
        // Well formed and signed with the right key, but not by us: a plain mismatch.
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
             sig,
         "SignatureDoesNotMatch"},
        // Well formed, but x-amz-content-sha256 travels unsigned (issue 17).
        {"AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;x-amz-date, " + sig, "AccessDenied"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.auth.substr(0, 120));
      SignableRequest req = GwRequest();
      req.headers.emplace_back("x-amz-date", FormatAmzDate(kNow));
      req.headers.emplace_back("x-amz-content-sha256", std::string(kEmptyPayloadSha256));
      req.headers.emplace_back("Authorization", c.auth);
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().detail().s3_code == c.s3_code);
    }
  }

  TEST_CASE("sigv4: requests without usable authentication") {
    SignableRequest req = GwRequest();
    Result<VerifiedRequest> anonymous = VerifyRequest(req, GwLookup, kNow);
    REQUIRE_FALSE(anonymous.ok());
    CHECK(anonymous.status().code() == StatusCode::kPermissionDenied);
    CHECK(anonymous.status().detail().s3_code == "AccessDenied");

    SignRequest(req, kGwCreds, kGwParams);
    SUBCASE("two Authorization headers") {
      req.headers.emplace_back("authorization", HeaderValue(req, "authorization"));
      CHECK(VerifyRequest(req, GwLookup, kNow).status().code() == StatusCode::kInvalidArgument);
    }
    SUBCASE("no date at all") {
      std::erase_if(req.headers, [](const auto& h) { return h.first == "x-amz-date"; });
      CHECK(VerifyRequest(req, GwLookup, kNow).status().detail().s3_code == "AccessDenied");
    }
    SUBCASE("a malformed date") {
      for (auto& [n, v] : req.headers) {
        if (n == "x-amz-date") v = "2026-03-01T10:00:00Z";
      }
      CHECK(VerifyRequest(req, GwLookup, kNow).status().detail().s3_code == "AccessDenied");
    }
    SUBCASE("an empty lookup function") {
      CHECK(VerifyRequest(req, SecretLookup(), kNow).status().detail().s3_code ==
            "InvalidAccessKeyId");
    }
  }

  TEST_CASE("sigv4: hostile presigned queries fail cleanly") {
    const std::vector<std::string> queries = {
        "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Signature=00",
        "X-Amz-Signature=%ZZ",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Algorithm=AWS4-HMAC-SHA256",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a&X-Amz-Date=b&X-Amz-Expires=c&X-Amz-"
        "SignedHeaders=host&X-Amz-Signature=d",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=GWKEY%2F20260301%2Fus-east-1%2Fs3%"
        "2Faws4_request&X-Amz-Date=20260301T100000Z&X-Amz-Expires=99999999999999999999&X-Amz-"
        "SignedHeaders=host&X-Amz-Signature=" +
            std::string(64, 'a'),
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=GWKEY%2F20260301%2Fus-east-1%2Fs3%"
        "2Faws4_request&X-Amz-Date=20260301T100000Z&X-Amz-Expires=-5&X-Amz-"
        "SignedHeaders=host&X-Amz-Signature=" +
            std::string(64, 'a'),
    };
    for (const std::string& q : queries) {
      CAPTURE(q);
      SignableRequest req = GwRequest();
      req.raw_query = q;
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK_FALSE(v.status().detail().s3_code.empty());
    }
  }

  // ---- issue 17: what must be signed, and which payload claims exist ----

  TEST_CASE("sigv4: an x-amz-* header that is not signed is refused (header auth)") {
    // Signed with host;x-amz-content-sha256;x-amz-date only, as in the report.
    SignableRequest req{.method = "PUT",
                        .encoded_path = "/bkt/victim",
                        .raw_query = "",
                        .headers = {{"host", "127.0.0.1:7070"}},
                        .payload_hash = std::string(kEmptyPayloadSha256)};
    SignRequest(req, kGwCreds, kGwParams);
    REQUIRE(VerifyRequest(req, GwLookup, kNow).ok());
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{"x-amz-copy-source", "/bkt/obj"},
                                                          {"X-Amz-Meta-Owner", "mallory"},
                                                          {"x-amz-storage-class", "GLACIER"},
                                                          {"x-amz-security-token", "t"}}) {
      const std::string header = name;  // clang 14 cannot capture a structured binding in CAPTURE
      CAPTURE(header);
      SignableRequest tampered = req;
      tampered.headers.emplace_back(name, value);
      Result<VerifiedRequest> v = VerifyRequest(tampered, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().code() == StatusCode::kPermissionDenied);
      CHECK(v.status().detail().s3_code == "AccessDenied");
      CHECK(v.status().detail().http_status == 403);
      CHECK(v.status().message().find(
                "There were headers present in the request which were not signed") == 0);
    }
    // Headers outside x-amz-* may still travel unsigned (proxies add them).
    req.headers.emplace_back("user-agent", "aws-cli/2");
    CHECK(VerifyRequest(req, GwLookup, kNow).ok());
  }

  TEST_CASE("sigv4: an x-amz-* header that is not signed is refused (presigned URL)") {
    SignableRequest put{.method = "PUT",
                        .encoded_path = "/bkt/victim",
                        .raw_query = "",
                        .headers = {{"host", "127.0.0.1:7070"}},
                        .payload_hash = ""};
    Result<std::string> q = PresignQuery(put, kGwCreds, kGwParams, 3600s);
    REQUIRE(q.ok());
    put.raw_query = *q;
    REQUIRE(VerifyRequest(put, GwLookup, kNow).ok());
    put.headers.emplace_back("x-amz-copy-source", "/bkt/obj");
    Result<VerifiedRequest> v = VerifyRequest(put, GwLookup, kNow);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().detail().s3_code == "AccessDenied");
  }

  TEST_CASE("sigv4: S3 header auth needs a signed x-amz-content-sha256 with a documented value") {
    SUBCASE("absent") {
      SignableRequest req = GwRequest();
      SignRequest(req, kGwCreds, kGwParams);
      std::erase_if(req.headers, [](const auto& h) { return h.first == "x-amz-content-sha256"; });
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().detail().s3_code == "InvalidRequest");
      CHECK(v.status().detail().http_status == 400);
    }
    SUBCASE("present but not signed") {
      SignableRequest req = GwRequest();
      SignRequest(
          req, kGwCreds,
          SigV4Params{
              .region = "us-east-1", .service = "other", .time = kNow, .s3_uri_rules = true});
      req.headers.emplace_back("x-amz-content-sha256", std::string(kUnsignedPayload));
      CHECK(VerifyRequest(req, GwLookup, kNow).status().detail().s3_code == "AccessDenied");
    }
    for (const std::string& claim :
         {std::string("zz-not-hex"), std::string("unsigned-payload"), std::string(63, 'a'),
          std::string(65, 'a'), std::string("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"),
          std::string("STREAMING-AWS4-HMAC-SHA256-EVENTS"), std::string(64, 'g')}) {
      CAPTURE(claim);
      SignableRequest req = GwRequest();
      req.payload_hash = claim;
      SignRequest(req, kGwCreds, kGwParams);
      req.payload_hash.clear();
      Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
      REQUIRE_FALSE(v.ok());
      CHECK(v.status().detail().s3_code == "InvalidArgument");
      CHECK(v.status().detail().http_status == 400);
    }
    // An upper-case hash is a hash; the body check compares case-insensitively.
    SignableRequest req = GwRequest();
    std::string upper = Sha256Hex("data");
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    req.payload_hash = upper;
    SignRequest(req, kGwCreds, kGwParams);
    req.payload_hash.clear();
    Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    CHECK(v->payload_hash == upper);
    CHECK_FALSE(v->chunk_signing.has_value());
  }

  TEST_CASE("sigv4: ClassifyPayloadClaim knows exactly the documented values") {
    CHECK(ClassifyPayloadClaim(Sha256Hex("")) == PayloadClaim::kSha256);
    CHECK(ClassifyPayloadClaim(std::string(64, 'F')) == PayloadClaim::kSha256);
    CHECK(ClassifyPayloadClaim("UNSIGNED-PAYLOAD") == PayloadClaim::kUnsigned);
    CHECK(ClassifyPayloadClaim("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") ==
          PayloadClaim::kStreamingSigned);
    CHECK(ClassifyPayloadClaim("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") ==
          PayloadClaim::kStreamingSignedTrailer);
    CHECK(ClassifyPayloadClaim("STREAMING-UNSIGNED-PAYLOAD-TRAILER") ==
          PayloadClaim::kStreamingUnsignedTrailer);
    CHECK(ClassifyPayloadClaim("") == PayloadClaim::kInvalid);
    CHECK(ClassifyPayloadClaim("STREAMING-") == PayloadClaim::kInvalid);
    CHECK(ClassifyPayloadClaim(" UNSIGNED-PAYLOAD") == PayloadClaim::kInvalid);
  }

  TEST_CASE("sigv4: a signed streaming claim carries the chunk signing context") {
    SignableRequest req = GwRequest();
    req.method = "PUT";
    req.payload_hash = std::string(kStreamingSignedPayload);
    SignRequest(req, kGwCreds, kGwParams);
    req.payload_hash.clear();
    Result<VerifiedRequest> v = VerifyRequest(req, GwLookup, kNow);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    REQUIRE(v->chunk_signing.has_value());
    const std::string auth = HeaderValue(req, "authorization");
    CHECK(v->chunk_signing->seed_signature == auth.substr(auth.size() - 64));
    CHECK(v->chunk_signing->amz_date == FormatAmzDate(kNow));
    CHECK(v->chunk_signing->scope == "20260301/us-east-1/s3/aws4_request");
    CHECK(v->chunk_signing->signing_key ==
          SigningKey("gateway-secret", "20260301", "us-east-1", "s3"));
  }
}

}  // namespace
}  // namespace reelfs::s3

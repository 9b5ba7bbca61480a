// SigV4 on the gateway side (s3/protocol/sigv4.h): a raw HTTP request head, split the way the
// gateway does (gateway/s3api/service.cc: the target at '?', header names lowercased), goes to
// VerifyRequest (header auth or presigned query) and CanonicalRequest. The seeds are the AWS
// test-suite requests with their Authorization headers, so the fuzzer starts past the parse.
//
// Properties: the same request signed by SignRequest, or presigned by PresignQuery, verifies.
#include <chrono>

#include "s3/protocol/sigv4.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)

const Credentials kCreds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

// 20150830T123600Z, the test suite's time.
std::chrono::system_clock::time_point SuiteTime() {
  using namespace std::chrono;  // NOLINT(google-build-using-namespace)
  return sys_days{year{2015} / 8 / 30} + hours{12} + minutes{36};
}

std::optional<std::string> Lookup(std::string_view access_key) {
  if (access_key == kCreds.access_key_id) return kCreds.secret_access_key;
  return std::nullopt;
}

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// What a real HTTP server can hand the verifier: token names and values without CR, LF or NUL.
bool PlausibleForServer(const SignableRequest& req) {
  if (req.encoded_path.empty() || req.encoded_path.front() != '/') return false;
  if (req.raw_query.find("X-Amz-") != std::string::npos) return false;
  for (const auto& [name, value] : req.headers) {
    if (name.empty()) return false;
    for (char c : name) {
      if (!IsTokenChar(c)) return false;
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) return false;
  }
  for (char c : req.method) {
    if (c < 'A' || c > 'Z') return false;
  }
  return !req.method.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = reelfs::fuzz::AsView(data, size);
  // Request line: METHOD SP TARGET [SP VERSION].
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t sp = line.find(' ');
  std::string_view method = line.substr(0, sp);
  std::string_view target = sp == std::string_view::npos ? "" : line.substr(sp + 1);
  target = target.substr(0, target.find(' '));
  size_t q = target.find('?');

  SignableRequest req;
  req.method = std::string(method);
  req.encoded_path = std::string(target.substr(0, q));
  req.raw_query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  req.headers = reelfs::fuzz::SplitHeaders(rest, /*lowercase=*/true);

  SigV4Params params;
  params.time = SuiteTime();
  VerifyOptions options;
  (void)VerifyRequest(req, Lookup, params.time, options);
  options.expected_region = "us-east-1";
  options.expected_service = "s3";
  (void)VerifyRequest(req, Lookup, params.time, options);

  std::vector<std::string> names;
  for (const auto& header : req.headers) names.push_back(header.first);
  (void)CanonicalRequest(req, names, params);

  if (!PlausibleForServer(req)) return 0;
  // Drop what the signer adds, then sign / presign and verify.
  SignableRequest plain = req;
  std::erase_if(plain.headers, [](const auto& h) {
    return h.first == "authorization" || h.first == "x-amz-date" ||
           h.first == "x-amz-content-sha256" || h.first == "x-amz-security-token";
  });
  bool has_host = false;
  for (const auto& h : plain.headers) has_host |= h.first == "host";
  if (!has_host) plain.headers.emplace_back("host", "example.amazonaws.com");

  SignableRequest signed_req = plain;
  SignRequest(signed_req, kCreds, params);
  auto verified = VerifyRequest(signed_req, Lookup, params.time, options);
  if (!verified.ok()) {
    std::fprintf(stderr, "%s\n", verified.status().ToString().c_str());
    reelfs::fuzz::Violated("a request signed by SignRequest verifies");
  }

  // A presigned URL signs only host, so the request carries no other x-amz-* header (the
  // gateway refuses unsigned ones).
  std::erase_if(plain.headers, [](const auto& h) { return h.first.starts_with("x-amz-"); });
  auto query = PresignQuery(plain, kCreds, params, std::chrono::hours(1));
  if (query.ok()) {
    SignableRequest presigned = plain;
    presigned.raw_query = *query;
    auto ok = VerifyRequest(presigned, Lookup, params.time, options);
    if (!ok.ok()) {
      std::fprintf(stderr, "%s\n", ok.status().ToString().c_str());
      reelfs::fuzz::Violated("a URL presigned by PresignQuery verifies");
    }
  }
  return 0;
}

#include "s3/protocol/sigv4.h"

#include <algorithm>
#include <array>
#include <string>

#include "common/strings.h"
#include "common/time_format.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/time_format.h"
#include "s3/protocol/uri.h"

namespace reelfs::s3 {
namespace {

using std::chrono::system_clock;

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kScopeTerminator = "aws4_request";
// AWS caps presigned URLs at 7 days (SigV4 query-auth documentation).
constexpr std::chrono::seconds kMaxPresignExpiry = std::chrono::hours(24 * 7);
// Real Authorization headers are ~200-600 bytes; anything this large is garbage or an attack,
// and rejecting it early bounds the work done for an unauthenticated peer.
constexpr size_t kMaxAuthorizationSize = 16 * 1024;
constexpr size_t kMaxSignedHeaders = 128;
constexpr size_t kSignatureHexSize = 64;

// The presign parameters SigV4 owns; any copy already in a request's query is replaced.
constexpr std::array<std::string_view, 7> kPresignParams = {
    "X-Amz-Algorithm",     "X-Amz-Credential", "X-Amz-Date",          "X-Amz-Expires",
    "X-Amz-SignedHeaders", "X-Amz-Signature",  "X-Amz-Security-Token"};

// SigV4: trim, and turn every run of white space inside the value into one space.
std::string CanonicalHeaderValue(std::string_view v) {
  v = Trim(v, kWhitespace);
  std::string out;
  out.reserve(v.size());
  bool in_space = false;
  for (char c : v) {
    if (IsWhitespace(c)) {
      in_space = true;
      continue;
    }
    if (in_space) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

const std::string* FindHeader(const SignableRequest& req, std::string_view name) {
  for (const auto& [n, v] : req.headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

size_t CountHeader(const SignableRequest& req, std::string_view name) {
  return static_cast<size_t>(
      std::count_if(req.headers.begin(), req.headers.end(),
                    [&](const auto& h) { return EqualsIgnoreCase(h.first, name); }));
}

void RemoveHeader(SignableRequest& req, std::string_view name) {
  std::erase_if(req.headers, [&](const auto& h) { return EqualsIgnoreCase(h.first, name); });
}

void SetHeader(SignableRequest& req, std::string_view name, std::string value) {
  RemoveHeader(req, name);
  req.headers.emplace_back(std::string(name), std::move(value));
}

// RFC 3986 §5.2.4 remove_dot_segments, plus collapsing empty segments ("//"), which is what
// the generic SigV4 algorithm means by "normalize the path".
std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> segments;
  bool trailing_slash = false;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = path.find('/', pos);
    const std::string_view seg =
        path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    trailing_slash = seg.empty() || seg == "." || seg == "..";
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  std::string out = "/";
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out.push_back('/');
    out += segments[i];
  }
  if (trailing_slash && !segments.empty()) out.push_back('/');
  return out;
}

// The canonical URI.
//
// Generic services: the wire path is normalized and then encoded once more ("double
// encoding": an escaped "%20" on the wire becomes "%2520"), as the AWS test suite requires.
//
// S3: no normalization and no second encoding. Instead of trusting the wire bytes verbatim we
// decode each segment and re-encode it with UriEncode. For a client that sends the canonical
// encoding (every SDK and the AWS CLI) this is the identity; for clients that leave legal but
// reserved characters unescaped ("/a:b", "/a(1)") or use lowercase hex, both sides still agree
// on one canonical form, so the gateway verifies what they signed. A segment with a malformed
// escape is encoded as raw bytes; the signature then simply does not match.
std::string CanonicalUri(std::string_view encoded_path, bool s3_uri_rules) {
  if (encoded_path.empty()) return "/";
  if (!s3_uri_rules) return UriEncode(NormalizePath(encoded_path), /*keep_slash=*/true);
  std::string out;
  out.reserve(encoded_path.size() + 8);
  size_t pos = 0;
  while (true) {
    const size_t slash = encoded_path.find('/', pos);
    const std::string_view seg = encoded_path.substr(
        pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    Result<std::string> decoded = UriDecode(seg);
    out += UriEncode(decoded.ok() ? std::string_view(*decoded) : seg, /*keep_slash=*/false);
    if (slash == std::string_view::npos) break;
    out.push_back('/');
    pos = slash + 1;
  }
  if (out.front() != '/') out.insert(out.begin(), '/');
  return out;
}

// Decodes the raw query leniently (a malformed escape is taken literally) so that signing never
// fails; a verifier sees the mismatch as a bad signature.
QueryParams LenientParseQuery(std::string_view raw_query) {
  Result<QueryParams> strict = ParseQuery(raw_query);
  if (strict.ok()) return std::move(strict).value();
  QueryParams params;
  while (!raw_query.empty()) {
    const size_t amp = raw_query.find('&');
    const std::string_view item = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view() : raw_query.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    Result<std::string> n = UriDecode(name);
    Result<std::string> v = UriDecode(value);
    params.emplace_back(n.ok() ? *n : std::string(name), v.ok() ? *v : std::string(value));
  }
  return params;
}

std::vector<std::string> NormalizeSignedHeaders(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(Lower(Trim(n, kWhitespace)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::erase(out, std::string());
  return out;
}

std::string JoinSignedHeaders(const std::vector<std::string>& sorted_names) {
  std::string out;
  for (const auto& n : sorted_names) {
    if (!out.empty()) out.push_back(';');
    out += n;
  }
  return out;
}

std::string ResolvePayloadHash(const SignableRequest& req) {
  if (!req.payload_hash.empty()) return req.payload_hash;
  if (const std::string* h = FindHeader(req, "x-amz-content-sha256"))
    return std::string(Trim(*h, kWhitespace));
  return std::string(kEmptyPayloadSha256);
}

// The canonical request with the query already canonicalized (presigning and verification
// add or drop X-Amz-* parameters first).
std::string BuildCanonicalRequest(const SignableRequest& req, std::string_view canonical_query,
                                  const std::vector<std::string>& sorted_names,
                                  std::string_view payload_hash, bool s3_uri_rules) {
  std::string out;
  out += req.method;
  out.push_back('\n');
  out += CanonicalUri(req.encoded_path, s3_uri_rules);
  out.push_back('\n');
  out += canonical_query;
  out.push_back('\n');
  for (const auto& name : sorted_names) {
    out += name;
    out.push_back(':');
    bool first = true;
    // Repeated headers are joined with ',' in the order they appeared (suite case
    // get-header-value-order), each value trimmed and collapsed on its own.
    for (const auto& [n, v] : req.headers) {
      if (!EqualsIgnoreCase(n, name)) continue;
      if (!first) out.push_back(',');
      out += CanonicalHeaderValue(v);
      first = false;
    }
    out.push_back('\n');
  }
  out.push_back('\n');
  out += JoinSignedHeaders(sorted_names);
  out.push_back('\n');
  out += payload_hash;
  return out;
}

std::string Scope(std::string_view date, std::string_view region, std::string_view service) {
  std::string out(date);
  out.push_back('/');
  out += region;
  out.push_back('/');
  out += service;
  out.push_back('/');
  out += kScopeTerminator;
  return out;
}

std::string ScopeOf(const SigV4Params& params) {
  return Scope(FormatAmzDate(params.time).substr(0, 8), params.region, params.service);
}

std::string Signature(std::string_view secret, const SigV4Params& params,
                      std::string_view canonical_request) {
  const std::string key =
      SigningKey(secret, FormatAmzDate(params.time).substr(0, 8), params.region, params.service);
  return HexEncode(HmacSha256(key, StringToSign(canonical_request, params)));
}

// ---- Verification helpers ----

Status AuthError(StatusCode code, int http, std::string_view s3_code, std::string message) {
  return Status(code, std::move(message),
                StatusDetail{.http_status = http, .s3_code = std::string(s3_code)});
}
Status AccessDenied(std::string msg) {
  return AuthError(StatusCode::kPermissionDenied, 403, "AccessDenied", std::move(msg));
}
Status HeaderMalformed(std::string msg) {
  return AuthError(StatusCode::kInvalidArgument, 400, "AuthorizationHeaderMalformed",
                   std::move(msg));
}
Status QueryMalformed(std::string msg) {
  return AuthError(StatusCode::kInvalidArgument, 400, "AuthorizationQueryParametersError",
                   std::move(msg));
}

// S3 acts on x-amz-* headers (x-amz-copy-source, x-amz-meta-*, x-amz-storage-class, ...), so one
// added to a signed request would change what it does: AWS refuses any that is not signed.
Status CheckAmzHeadersSigned(const SignableRequest& req,
                             const std::vector<std::string>& signed_headers) {
  for (const auto& [name, value] : req.headers) {
    const std::string lower = Lower(name);
    if (!lower.starts_with("x-amz-")) continue;
    if (std::find(signed_headers.begin(), signed_headers.end(), lower) == signed_headers.end()) {
      return AccessDenied("There were headers present in the request which were not signed: " +
                          lower);
    }
  }
  return Status::Ok();
}

Status InvalidPayloadClaim() {
  return AuthError(StatusCode::kInvalidArgument, 400, "InvalidArgument",
                   "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], "
                   "STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid sha256 value");
}

std::string ChainedStringToSign(std::string_view algorithm, const ChunkSigningContext& ctx,
                                std::string_view previous_signature) {
  std::string out(algorithm);
  out.push_back('\n');
  out += ctx.amz_date;
  out.push_back('\n');
  out += ctx.scope;
  out.push_back('\n');
  out += previous_signature;
  out.push_back('\n');
  return out;
}

// "20150830T123600Z" -> time point; strict, since it is part of what is signed.
Result<system_clock::time_point> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') {
    return Status::InvalidArgument("malformed X-Amz-Date");
  }
  for (size_t i : {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14}) {
    if (s[i] < '0' || s[i] > '9') return Status::InvalidArgument("malformed X-Amz-Date");
  }
  std::string iso;
  iso.reserve(20);
  iso.append(s.substr(0, 4)).append("-").append(s.substr(4, 2)).append("-");
  iso.append(s.substr(6, 2)).append("T").append(s.substr(9, 2)).append(":");
  iso.append(s.substr(11, 2)).append(":").append(s.substr(13, 2)).append("Z");
  return ParseIso8601(iso);
}

struct CredentialScope {
  std::string access_key;
  std::string date;
  std::string region;
  std::string service;
};

// "AKID/20150830/us-east-1/s3/aws4_request"
std::optional<CredentialScope> ParseCredential(std::string_view s) {
  std::array<std::string_view, 5> parts;
  size_t n = 0;
  while (n < parts.size()) {
    const size_t slash = s.find('/');
    parts[n++] = s.substr(0, slash);
    if (slash == std::string_view::npos) {
      s = {};
      break;
    }
    s.remove_prefix(slash + 1);
    if (n == parts.size()) return std::nullopt;  // more than five parts
  }
  if (n != parts.size() || parts[4] != kScopeTerminator) return std::nullopt;
  for (size_t i = 0; i < 4; ++i) {
    if (parts[i].empty()) return std::nullopt;
  }
  if (parts[1].size() != 8 ||
      !std::all_of(parts[1].begin(), parts[1].end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return CredentialScope{std::string(parts[0]), std::string(parts[1]), std::string(parts[2]),
                         std::string(parts[3])};
}

std::optional<std::vector<std::string>> ParseSignedHeaders(std::string_view s) {
  std::vector<std::string> names;
  while (true) {
    const size_t semi = s.find(';');
    const std::string_view name = s.substr(0, semi);
    if (name.empty() || names.size() >= kMaxSignedHeaders) return std::nullopt;
    for (char c : name) {
      // Header names are tokens (RFC 9110 §5.6.2); SigV4 lists them lowercased.
      if (c <= ' ' || c >= 0x7f || c == ':' || (c >= 'A' && c <= 'Z')) return std::nullopt;
    }
    names.emplace_back(name);
    if (semi == std::string_view::npos) break;
    s.remove_prefix(semi + 1);
  }
  if (std::find(names.begin(), names.end(), "host") == names.end()) return std::nullopt;
  return names;
}

std::optional<std::string> ParseSignatureHex(std::string_view s) {
  if (s.size() != kSignatureHexSize) return std::nullopt;
  std::string out = Lower(s);
  for (char c : out) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return out;
}

// What both verification paths hand to the common signature check.
struct AuthClaim {
  CredentialScope scope;
  std::string amz_date;
  system_clock::time_point time;
  std::vector<std::string> signed_headers;
  std::string signature;
  std::string canonical_query;
  std::string payload_hash;
};

Status CheckDateMatchesScope(const AuthClaim& claim, bool presigned) {
  if (claim.amz_date.compare(0, 8, claim.scope.date) != 0) {
    std::string msg =
        "credential date " + claim.scope.date + " differs from X-Amz-Date " + claim.amz_date;
    return presigned ? QueryMalformed(std::move(msg)) : HeaderMalformed(std::move(msg));
  }
  return Status::Ok();
}

// The scope's region/service against what this endpoint serves (when it says): a request signed
// for another region would otherwise verify, and AWS rejects it with this same code.
Status CheckScopeMatches(const AuthClaim& claim, bool presigned, const VerifyOptions& options) {
  std::string msg;
  if (!options.expected_region.empty() && claim.scope.region != options.expected_region) {
    msg = "the region '" + claim.scope.region + "' is wrong; expecting '" +
          options.expected_region + "'";
  } else if (!options.expected_service.empty() && claim.scope.service != options.expected_service) {
    msg = "the service '" + claim.scope.service + "' is wrong; expecting '" +
          options.expected_service + "'";
  } else {
    return Status::Ok();
  }
  return presigned ? QueryMalformed(std::move(msg)) : HeaderMalformed(std::move(msg));
}

Result<VerifiedRequest> CheckSignature(const SignableRequest& req, const AuthClaim& claim,
                                       const SecretLookup& lookup, bool presigned) {
  std::optional<std::string> secret = lookup ? lookup(claim.scope.access_key) : std::nullopt;
  if (!secret) {
    return AuthError(StatusCode::kUnauthenticated, 403, "InvalidAccessKeyId",
                     "the access key id does not exist in our records");
  }
  const SigV4Params params{.region = claim.scope.region,
                           .service = claim.scope.service,
                           .time = claim.time,
                           .s3_uri_rules = claim.scope.service == "s3"};
  const std::string creq = BuildCanonicalRequest(req, claim.canonical_query,
                                                 NormalizeSignedHeaders(claim.signed_headers),
                                                 claim.payload_hash, params.s3_uri_rules);
  std::string signing_key =
      SigningKey(*secret, claim.scope.date, claim.scope.region, claim.scope.service);
  const std::string expected = HexEncode(HmacSha256(signing_key, StringToSign(creq, params)));
  if (!ConstantTimeEquals(expected, claim.signature)) {
    return AuthError(StatusCode::kUnauthenticated, 403, "SignatureDoesNotMatch",
                     "the request signature we calculated does not match the signature you "
                     "provided");
  }
  VerifiedRequest out{.access_key_id = claim.scope.access_key,
                      .presigned = presigned,
                      .payload_hash = claim.payload_hash};
  const PayloadClaim kind = ClassifyPayloadClaim(claim.payload_hash);
  if (!presigned &&
      (kind == PayloadClaim::kStreamingSigned || kind == PayloadClaim::kStreamingSignedTrailer)) {
    out.chunk_signing = ChunkSigningContext{
        .signing_key = std::move(signing_key),
        .amz_date = claim.amz_date,
        .scope = Scope(claim.scope.date, claim.scope.region, claim.scope.service),
        .seed_signature = claim.signature};
  }
  return out;
}

Result<VerifiedRequest> VerifyHeaderAuth(const SignableRequest& req, std::string_view auth,
                                         const SecretLookup& lookup, system_clock::time_point now,
                                         const VerifyOptions& options) {
  const std::chrono::seconds max_skew = options.max_skew;
  if (auth.size() > kMaxAuthorizationSize) return HeaderMalformed("Authorization header too long");
  auth = Trim(auth, kWhitespace);
  if (auth.substr(0, kAlgorithm.size()) != kAlgorithm ||
      (auth.size() > kAlgorithm.size() && !IsWhitespace(auth[kAlgorithm.size()]))) {
    return AccessDenied("unsupported authorization type (only AWS4-HMAC-SHA256 is accepted)");
  }
  auth.remove_prefix(kAlgorithm.size());
  std::optional<std::string_view> credential, signed_headers, signature;
  while (!auth.empty()) {
    const size_t comma = auth.find(',');
    const std::string_view item = Trim(auth.substr(0, comma), kWhitespace);
    auth = comma == std::string_view::npos ? std::string_view() : auth.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return HeaderMalformed("malformed Authorization component");
    const std::string_view key = Trim(item.substr(0, eq), kWhitespace);
    const std::string_view value = Trim(item.substr(eq + 1), kWhitespace);
    std::optional<std::string_view>* slot = key == "Credential"      ? &credential
                                            : key == "SignedHeaders" ? &signed_headers
                                            : key == "Signature"     ? &signature
                                                                     : nullptr;
    if (slot == nullptr) return HeaderMalformed("unknown Authorization component");
    if (slot->has_value()) return HeaderMalformed("repeated Authorization component");
    *slot = value;
  }
  if (!credential || !signed_headers || !signature) {
    return HeaderMalformed("Authorization needs Credential, SignedHeaders and Signature");
  }
  AuthClaim claim;
  std::optional<CredentialScope> scope = ParseCredential(*credential);
  if (!scope) return HeaderMalformed("malformed Credential");
  claim.scope = std::move(*scope);
  std::optional<std::vector<std::string>> names = ParseSignedHeaders(*signed_headers);
  if (!names) return HeaderMalformed("malformed SignedHeaders (host must be signed)");
  claim.signed_headers = std::move(*names);
  std::optional<std::string> sig = ParseSignatureHex(*signature);
  if (!sig) return HeaderMalformed("malformed Signature");
  claim.signature = std::move(*sig);

  // x-amz-date is what SDKs sign; the Date header is the documented fallback.
  if (CountHeader(req, "x-amz-date") > 1) return HeaderMalformed("repeated x-amz-date");
  if (const std::string* d = FindHeader(req, "x-amz-date")) {
    claim.amz_date = std::string(Trim(*d, kWhitespace));
    Result<system_clock::time_point> t = ParseAmzDate(claim.amz_date);
    if (!t.ok()) return AccessDenied("malformed x-amz-date");
    claim.time = *t;
  } else if (const std::string* date = FindHeader(req, "date")) {
    Result<system_clock::time_point> t = ParseHttpDate(Trim(*date, kWhitespace));
    if (!t.ok()) return AccessDenied("malformed Date header");
    claim.time = *t;
    claim.amz_date = FormatAmzDate(claim.time);
  } else {
    return AccessDenied("request has neither x-amz-date nor Date");
  }
  REELFS_RETURN_IF_ERROR(CheckDateMatchesScope(claim, /*presigned=*/false));
  REELFS_RETURN_IF_ERROR(CheckScopeMatches(claim, /*presigned=*/false, options));
  REELFS_RETURN_IF_ERROR(CheckAmzHeadersSigned(req, claim.signed_headers));
  const auto skew = now > claim.time ? now - claim.time : claim.time - now;
  if (skew > max_skew) {
    return AuthError(StatusCode::kPermissionDenied, 403, "RequestTimeTooSkewed",
                     "the difference between the request time and the server's time is too "
                     "large");
  }
  claim.canonical_query = CanonicalQueryString(LenientParseQuery(req.raw_query));
  // The client's claim is signed as-is (a hex digest, UNSIGNED-PAYLOAD or STREAMING-*); the
  // gateway checks the body against it afterwards.
  if (CountHeader(req, "x-amz-content-sha256") > 1) {
    return HeaderMalformed("repeated x-amz-content-sha256");
  }
  // S3 requires the payload claim, signed (CheckAmzHeadersSigned saw to the latter): without it
  // the body would not be covered by the signature at all.
  if (claim.scope.service == "s3" && req.payload_hash.empty() &&
      FindHeader(req, "x-amz-content-sha256") == nullptr) {
    return AuthError(StatusCode::kInvalidArgument, 400, "InvalidRequest",
                     "Missing required header for this request: x-amz-content-sha256");
  }
  claim.payload_hash = ResolvePayloadHash(req);
  if (ClassifyPayloadClaim(claim.payload_hash) == PayloadClaim::kInvalid) {
    return InvalidPayloadClaim();
  }
  return CheckSignature(req, claim, lookup, /*presigned=*/false);
}

Result<VerifiedRequest> VerifyPresigned(const SignableRequest& req, QueryParams params,
                                        const SecretLookup& lookup, system_clock::time_point now,
                                        const VerifyOptions& options) {
  const std::chrono::seconds max_skew = options.max_skew;
  auto take = [&](std::string_view name) -> Result<std::optional<std::string>> {
    std::optional<std::string> found;
    for (const auto& [n, v] : params) {
      if (n != name) continue;
      if (found) return QueryMalformed("repeated " + std::string(name));
      found = v;
    }
    return found;
  };
  REELFS_ASSIGN_OR_RETURN(auto algorithm, take("X-Amz-Algorithm"));
  REELFS_ASSIGN_OR_RETURN(auto credential, take("X-Amz-Credential"));
  REELFS_ASSIGN_OR_RETURN(auto date, take("X-Amz-Date"));
  REELFS_ASSIGN_OR_RETURN(auto expires, take("X-Amz-Expires"));
  REELFS_ASSIGN_OR_RETURN(auto signed_headers, take("X-Amz-SignedHeaders"));
  REELFS_ASSIGN_OR_RETURN(auto signature, take("X-Amz-Signature"));
  if (!algorithm || *algorithm != kAlgorithm) {
    return QueryMalformed("X-Amz-Algorithm must be AWS4-HMAC-SHA256");
  }
  if (!credential || !date || !expires || !signed_headers || !signature) {
    return QueryMalformed(
        "presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders "
        "and X-Amz-Signature");
  }
  AuthClaim claim;
  std::optional<CredentialScope> scope = ParseCredential(*credential);
  if (!scope) return QueryMalformed("malformed X-Amz-Credential");
  claim.scope = std::move(*scope);
  std::optional<std::vector<std::string>> names = ParseSignedHeaders(*signed_headers);
  if (!names) return QueryMalformed("malformed X-Amz-SignedHeaders (host must be signed)");
  claim.signed_headers = std::move(*names);
  std::optional<std::string> sig = ParseSignatureHex(*signature);
  if (!sig) return QueryMalformed("malformed X-Amz-Signature");
  claim.signature = std::move(*sig);
  claim.amz_date = *date;
  Result<system_clock::time_point> t = ParseAmzDate(claim.amz_date);
  if (!t.ok()) return QueryMalformed("malformed X-Amz-Date");
  claim.time = *t;
  REELFS_RETURN_IF_ERROR(CheckDateMatchesScope(claim, /*presigned=*/true));
  REELFS_RETURN_IF_ERROR(CheckScopeMatches(claim, /*presigned=*/true, options));
  REELFS_RETURN_IF_ERROR(CheckAmzHeadersSigned(req, claim.signed_headers));

  int64_t expires_s = 0;
  if (expires->empty() || expires->size() > 7 ||
      !std::all_of(expires->begin(), expires->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return QueryMalformed("malformed X-Amz-Expires");
  }
  expires_s = std::stoll(*expires);
  if (expires_s < 1 || std::chrono::seconds(expires_s) > kMaxPresignExpiry) {
    return QueryMalformed("X-Amz-Expires must be between 1 second and 7 days");
  }
  if (now > claim.time + std::chrono::seconds(expires_s))
    return AccessDenied("Request has expired");
  if (claim.time > now + max_skew) return AccessDenied("Request is not valid yet");

  std::erase_if(params, [](const auto& p) { return p.first == "X-Amz-Signature"; });
  claim.canonical_query = CanonicalQueryString(params);
  // A presigned URL cannot know the body it will carry (S3 query-auth documentation).
  claim.payload_hash = std::string(kUnsignedPayload);
  Result<VerifiedRequest> verified = CheckSignature(req, claim, lookup, /*presigned=*/true);
  // A signed x-amz-content-sha256 sent along still binds the body to a hash; an aws-chunked
  // body has no seed to chain from here.
  if (const std::string* h = FindHeader(req, "x-amz-content-sha256"); h && verified.ok()) {
    const std::string claimed(Trim(*h, kWhitespace));
    const PayloadClaim kind = ClassifyPayloadClaim(claimed);
    if (kind != PayloadClaim::kSha256 && kind != PayloadClaim::kUnsigned) {
      return InvalidPayloadClaim();
    }
    verified->payload_hash = claimed;
  }
  return verified;
}

}  // namespace

std::string FormatAmzDate(system_clock::time_point t) { return FormatIso8601Basic(t); }

std::string CanonicalRequest(const SignableRequest& req,
                             const std::vector<std::string>& signed_headers,
                             const SigV4Params& params) {
  return BuildCanonicalRequest(req, CanonicalQueryString(LenientParseQuery(req.raw_query)),
                               NormalizeSignedHeaders(signed_headers), ResolvePayloadHash(req),
                               params.s3_uri_rules);
}

std::string StringToSign(std::string_view canonical_request, const SigV4Params& params) {
  std::string out(kAlgorithm);
  out.push_back('\n');
  out += FormatAmzDate(params.time);
  out.push_back('\n');
  out += ScopeOf(params);
  out.push_back('\n');
  out += Sha256Hex(canonical_request);
  return out;
}

std::string SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                       std::string_view service) {
  const std::string k_date = HmacSha256("AWS4" + std::string(secret), date);
  const std::string k_region = HmacSha256(k_date, region);
  const std::string k_service = HmacSha256(k_region, service);
  return HmacSha256(k_service, kScopeTerminator);
}

void SignRequest(SignableRequest& req, const Credentials& creds, const SigV4Params& params) {
  SignRequest(req, creds, params,
              SigningKey(creds.secret_access_key, FormatAmzDate(params.time).substr(0, 8),
                         params.region, params.service));
}

void SignRequest(SignableRequest& req, const Credentials& creds, const SigV4Params& params,
                 std::string_view signing_key) {
  const std::string payload_hash = ResolvePayloadHash(req);
  RemoveHeader(req, "authorization");
  SetHeader(req, "x-amz-date", FormatAmzDate(params.time));
  // S3 requires the payload claim as a header; other services sign the body implicitly.
  if (params.service == "s3") SetHeader(req, "x-amz-content-sha256", payload_hash);
  if (!creds.session_token.empty()) SetHeader(req, "x-amz-security-token", creds.session_token);

  std::vector<std::string> names;
  names.reserve(req.headers.size());
  for (const auto& [n, v] : req.headers) names.push_back(Lower(n));
  const std::vector<std::string> sorted = NormalizeSignedHeaders(names);
  const std::string creq =
      BuildCanonicalRequest(req, CanonicalQueryString(LenientParseQuery(req.raw_query)), sorted,
                            payload_hash, params.s3_uri_rules);
  std::string auth(kAlgorithm);
  auth += " Credential=" + creds.access_key_id + "/" + ScopeOf(params);
  auth += ", SignedHeaders=" + JoinSignedHeaders(sorted);
  auth += ", Signature=" + HexEncode(HmacSha256(signing_key, StringToSign(creq, params)));
  req.headers.emplace_back("authorization", std::move(auth));
}

Result<std::string> PresignQuery(const SignableRequest& req, const Credentials& creds,
                                 const SigV4Params& params, std::chrono::seconds expires) {
  if (expires < std::chrono::seconds(1) || expires > kMaxPresignExpiry) {
    return Status::InvalidArgument("presign expiry must be between 1 second and 7 days");
  }
  if (FindHeader(req, "host") == nullptr) {
    return Status::InvalidArgument("presign needs a host header");
  }
  REELFS_ASSIGN_OR_RETURN(QueryParams query, ParseQuery(req.raw_query));
  std::erase_if(query, [](const auto& p) {
    return std::find(kPresignParams.begin(), kPresignParams.end(), p.first) != kPresignParams.end();
  });
  query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  query.emplace_back("X-Amz-Credential", creds.access_key_id + "/" + ScopeOf(params));
  query.emplace_back("X-Amz-Date", FormatAmzDate(params.time));
  query.emplace_back("X-Amz-Expires", std::to_string(expires.count()));
  query.emplace_back("X-Amz-SignedHeaders", "host");
  if (!creds.session_token.empty()) query.emplace_back("X-Amz-Security-Token", creds.session_token);

  const std::string canonical_query = CanonicalQueryString(query);
  const std::string creq =
      BuildCanonicalRequest(req, canonical_query, {"host"}, kUnsignedPayload, params.s3_uri_rules);
  return canonical_query + "&X-Amz-Signature=" + Signature(creds.secret_access_key, params, creq);
}

PayloadClaim ClassifyPayloadClaim(std::string_view value) {
  if (value.size() == 64 && std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      })) {
    return PayloadClaim::kSha256;
  }
  if (value == kUnsignedPayload) return PayloadClaim::kUnsigned;
  if (value == kStreamingSignedPayload) return PayloadClaim::kStreamingSigned;
  if (value == kStreamingSignedPayloadTrailer) return PayloadClaim::kStreamingSignedTrailer;
  if (value == kStreamingUnsignedPayloadTrailer) return PayloadClaim::kStreamingUnsignedTrailer;
  return PayloadClaim::kInvalid;
}

std::string ChunkSignature(const ChunkSigningContext& ctx, std::string_view previous_signature,
                           std::string_view chunk_sha256_hex) {
  std::string sts = ChainedStringToSign("AWS4-HMAC-SHA256-PAYLOAD", ctx, previous_signature);
  sts += kEmptyPayloadSha256;  // the (absent) chunk headers
  sts.push_back('\n');
  sts += chunk_sha256_hex;
  return HexEncode(HmacSha256(ctx.signing_key, sts));
}

std::string TrailerSignature(const ChunkSigningContext& ctx, std::string_view previous_signature,
                             std::string_view trailer_sha256_hex) {
  std::string sts = ChainedStringToSign("AWS4-HMAC-SHA256-TRAILER", ctx, previous_signature);
  sts += trailer_sha256_hex;
  return HexEncode(HmacSha256(ctx.signing_key, sts));
}

Result<VerifiedRequest> VerifyRequest(const SignableRequest& req, const SecretLookup& lookup,
                                      system_clock::time_point now, std::chrono::seconds max_skew) {
  return VerifyRequest(req, lookup, now, VerifyOptions{.max_skew = max_skew});
}

Result<VerifiedRequest> VerifyRequest(const SignableRequest& req, const SecretLookup& lookup,
                                      system_clock::time_point now, const VerifyOptions& options) {
  const size_t auth_headers = CountHeader(req, "authorization");
  if (auth_headers > 1) return HeaderMalformed("more than one Authorization header");
  if (const std::string* auth = FindHeader(req, "authorization")) {
    return VerifyHeaderAuth(req, *auth, lookup, now, options);
  }
  Result<QueryParams> query = ParseQuery(req.raw_query);
  if (!query.ok()) {
    // Without a parsable query there is no presigned claim to examine.
    return AccessDenied("no authentication (malformed query string)");
  }
  const bool presigned = std::any_of(query->begin(), query->end(), [](const auto& p) {
    return p.first == "X-Amz-Algorithm" || p.first == "X-Amz-Signature" ||
           p.first == "X-Amz-Credential";
  });
  if (!presigned) return AccessDenied("anonymous requests are not allowed");
  return VerifyPresigned(req, std::move(query).value(), lookup, now, options);
}

}  // namespace reelfs::s3

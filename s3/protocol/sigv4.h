// AWS Signature Version 4: signing (client), presigning (client) and verification (gateway).
//
// One implementation, two users, tested against the published AWS SigV4 test-suite vectors
// (tests/unit/s3/data/sigv4/). S3 differs from the generic algorithm in two ways, selected by
// SigV4Params::s3_uri_rules: the path is not normalized and not encoded a second time.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace reelfs::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  bool empty() const { return access_key_id.empty(); }
};

// An HTTP request exactly as it goes on the wire.
struct SignableRequest {
  std::string method;        // "GET"
  std::string encoded_path;  // "/bucket/a%20b" as sent, without the query
  std::string raw_query;     // "list-type=2&prefix=a" as sent, without '?'
  std::vector<std::pair<std::string, std::string>> headers;  // must include "host"
  // Hex SHA-256 of the body, "UNSIGNED-PAYLOAD", or empty to take x-amz-content-sha256 (or
  // the empty-body hash when that header is absent).
  std::string payload_hash;
};

struct SigV4Params {
  std::string region = "us-east-1";
  std::string service = "s3";
  std::chrono::system_clock::time_point time;  // request time (x-amz-date)
  bool s3_uri_rules = true;  // false: generic AWS rules (normalize path, double-encode)
};

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingSignedPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
inline constexpr std::string_view kStreamingSignedPayloadTrailer =
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
inline constexpr std::string_view kStreamingUnsignedPayloadTrailer =
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Building blocks, exposed for the test vectors.
// 20150830T123600Z: SigV4's name for FormatIso8601Basic (common/time_format.h).
std::string FormatAmzDate(std::chrono::system_clock::time_point t);
std::string CanonicalRequest(const SignableRequest& req,
                             const std::vector<std::string>& signed_headers,
                             const SigV4Params& params);
std::string StringToSign(std::string_view canonical_request, const SigV4Params& params);
std::string SigningKey(std::string_view secret, std::string_view date /*YYYYMMDD*/,
                       std::string_view region, std::string_view service);

// Adds x-amz-date, x-amz-content-sha256 (service "s3" only), x-amz-security-token when the
// credentials have one, and Authorization. Signs every header present.
void SignRequest(SignableRequest& req, const Credentials& creds, const SigV4Params& params);
// Same, with the signing key already derived: SigningKey(creds.secret_access_key, the YYYYMMDD of
// params.time, params.region, params.service). Lets a client cache the key for a day instead of
// running four HMACs per request.
void SignRequest(SignableRequest& req, const Credentials& creds, const SigV4Params& params,
                 std::string_view signing_key);

// Returns the full query string for a presigned URL (the request's own query parameters plus
// X-Amz-*), valid for `expires` (1 s .. 7 days). Only "host" is signed.
Result<std::string> PresignQuery(const SignableRequest& req, const Credentials& creds,
                                 const SigV4Params& params, std::chrono::seconds expires);

// What an x-amz-content-sha256 value claims about the body. The S3 SigV4 documentation lists
// exactly these: a SHA-256 (64 hex digits, either case), UNSIGNED-PAYLOAD and the STREAMING-*
// forms of aws-chunked bodies. The SigV4a (ECDSA) forms are kInvalid: a request signed with
// AWS4-HMAC-SHA256 cannot carry ECDSA chunk signatures.
enum class PayloadClaim {
  kSha256,
  kUnsigned,
  kStreamingSigned,           // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
  kStreamingSignedTrailer,    // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  kStreamingUnsignedTrailer,  // STREAMING-UNSIGNED-PAYLOAD-TRAILER
  kInvalid,
};
PayloadClaim ClassifyPayloadClaim(std::string_view value);
inline bool IsStreamingClaim(PayloadClaim c) {
  return c == PayloadClaim::kStreamingSigned || c == PayloadClaim::kStreamingSignedTrailer ||
         c == PayloadClaim::kStreamingUnsignedTrailer;
}

// What the chunk signatures of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER] body chain from
// (S3 "chunked upload" documentation): the request's signing key, date and scope, and its own
// signature as the seed.
struct ChunkSigningContext {
  std::string signing_key;     // raw bytes (SigningKey)
  std::string amz_date;        // "20130524T000000Z"
  std::string scope;           // "20130524/us-east-1/s3/aws4_request"
  std::string seed_signature;  // hex
};
// Hex signature of one chunk ("AWS4-HMAC-SHA256-PAYLOAD" string to sign); the final, empty chunk
// is signed like any other.
std::string ChunkSignature(const ChunkSigningContext& ctx, std::string_view previous_signature,
                           std::string_view chunk_sha256_hex);
// Hex signature of the trailer chunk ("AWS4-HMAC-SHA256-TRAILER"): trailer_sha256_hex hashes the
// trailer lines as "name:value\n" each, without x-amz-trailer-signature.
std::string TrailerSignature(const ChunkSigningContext& ctx, std::string_view previous_signature,
                             std::string_view trailer_sha256_hex);

// Gateway side. Looks up the secret for an access key; nullopt if the key is unknown.
using SecretLookup = std::function<std::optional<std::string>(std::string_view access_key)>;

// What the verifier checks beyond the signature itself.
struct VerifyOptions {
  std::chrono::seconds max_skew = std::chrono::minutes(15);
  // The credential scope must name this region / service (AuthorizationHeaderMalformed, or
  // AuthorizationQueryParametersError for a presigned URL, otherwise). Empty: any is accepted.
  std::string expected_region;
  std::string expected_service;
};

struct VerifiedRequest {
  std::string access_key_id;
  bool presigned = false;
  // What the client claims the body hashes to (hex), or "UNSIGNED-PAYLOAD"; the gateway checks
  // the body against it after reading.
  std::string payload_hash;
  // Set when payload_hash is STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER].
  std::optional<ChunkSigningContext> chunk_signing;
};

// Verifies header auth (Authorization: AWS4-HMAC-SHA256 ...) or a presigned query. Failures carry
// the S3 error code in detail().s3_code (and the HTTP status in detail().http_status):
// AccessDenied (kPermissionDenied: no auth, another auth scheme, bad date, expired presign),
// InvalidAccessKeyId and SignatureDoesNotMatch (kUnauthenticated), RequestTimeTooSkewed
// (kPermissionDenied), AuthorizationHeaderMalformed / AuthorizationQueryParametersError
// (kInvalidArgument: an AWS4-HMAC-SHA256 header or presigned query that does not parse).
// Every x-amz-* header present must be signed (403 AccessDenied "There were headers present in
// the request which were not signed"), with header auth and presigned URLs alike; an S3 request
// with header auth must carry x-amz-content-sha256 (400 InvalidRequest) holding a value
// ClassifyPayloadClaim knows (400 InvalidArgument).
// VerifiedRequest::payload_hash is x-amz-content-sha256 as sent (req.payload_hash if set, the
// empty-body hash if neither); for presigned URLs UNSIGNED-PAYLOAD, or the hash a signed
// x-amz-content-sha256 header sent along names.
Result<VerifiedRequest> VerifyRequest(const SignableRequest& req, const SecretLookup& lookup,
                                      std::chrono::system_clock::time_point now,
                                      std::chrono::seconds max_skew = std::chrono::minutes(15));
// Same, with the scope checks of VerifyOptions.
Result<VerifiedRequest> VerifyRequest(const SignableRequest& req, const SecretLookup& lookup,
                                      std::chrono::system_clock::time_point now,
                                      const VerifyOptions& options);

}  // namespace reelfs::s3

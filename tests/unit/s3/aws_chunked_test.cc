// The aws-chunked decoder against the AWS documentation's chunked-upload examples ("Example: PUT
// Object", 64 KiB + 1 KiB of 'a', with and without a signed trailer), and what breaks it.
#include "s3/protocol/aws_chunked.h"

#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "s3/protocol/checksum.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {
namespace {

constexpr std::string_view kDocSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kDocDate = "20130524T000000Z";
constexpr std::string_view kDocScope = "20130524/us-east-1/s3/aws4_request";

// The published signatures: the seed (the Authorization header's) and one per chunk.
struct DocExample {
  std::string seed;
  std::vector<std::string> chunks;  // 64 KiB, 1 KiB, final empty chunk
  std::string trailer;              // trailer lines after the final chunk, "" without
};

const DocExample kPlain{"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
                        {"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                         "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                         "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
                        ""};
const DocExample kTrailer{
    "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
    {"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
     "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
     "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"},
    "x-amz-checksum-crc32c:sOO8/Q==\r\n"
    "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n"};

ChunkSigningContext DocContext(const DocExample& ex) {
  return ChunkSigningContext{.signing_key = SigningKey(kDocSecret, "20130524", "us-east-1", "s3"),
                             .amz_date = std::string(kDocDate),
                             .scope = std::string(kDocScope),
                             .seed_signature = ex.seed};
}

std::string DocBody(const DocExample& ex) {
  std::string body = "10000;chunk-signature=" + ex.chunks[0] + "\r\n";
  body += std::string(65536, 'a');
  body += "\r\n400;chunk-signature=" + ex.chunks[1] + "\r\n";
  body += std::string(1024, 'a');
  body += "\r\n0;chunk-signature=" + ex.chunks[2] + "\r\n";
  body += ex.trailer;
  body += "\r\n";
  return body;
}

// Feeds `body` in pieces of `step` bytes; returns the first error (Feed or Finish).
Status Decode(AwsChunkedDecoder& d, std::string_view body, size_t step, std::string* out) {
  for (size_t off = 0; off < body.size(); off += step) {
    REELFS_RETURN_IF_ERROR(d.Feed(body.substr(off, step), out));
  }
  return d.Finish();
}

AwsChunkedDecoder Make(PayloadClaim claim, std::optional<ChunkSigningContext> ctx,
                       std::string trailer = "") {
  auto d = AwsChunkedDecoder::Create(AwsChunkedOptions{
      .claim = claim, .signing = std::move(ctx), .declared_trailer = std::move(trailer)});
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  return std::move(d).value();
}

TEST_CASE("aws-chunked: the documented signatures, chunk by chunk") {
  const ChunkSigningContext ctx = DocContext(kPlain);
  const std::string s1 = ChunkSignature(ctx, kPlain.seed, Sha256Hex(std::string(65536, 'a')));
  CHECK(s1 == kPlain.chunks[0]);
  const std::string s2 = ChunkSignature(ctx, s1, Sha256Hex(std::string(1024, 'a')));
  CHECK(s2 == kPlain.chunks[1]);
  CHECK(ChunkSignature(ctx, s2, kEmptyPayloadSha256) == kPlain.chunks[2]);
}

TEST_CASE("aws-chunked: the documented seed signatures verify as the request's") {
  for (const bool trailer : {false, true}) {
    CAPTURE(trailer);
    const DocExample& ex = trailer ? kTrailer : kPlain;
    SignableRequest req;
    req.method = "PUT";
    req.encoded_path = "/examplebucket/chunkObject.txt";
    req.headers = {{"content-encoding", "aws-chunked"},
                   {"host", "s3.amazonaws.com"},
                   {"x-amz-content-sha256", trailer ? std::string(kStreamingSignedPayloadTrailer)
                                                    : std::string(kStreamingSignedPayload)},
                   {"x-amz-date", std::string(kDocDate)},
                   {"x-amz-decoded-content-length", "66560"},
                   {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
    std::string signed_headers =
        "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
        "x-amz-storage-class";
    if (trailer) {
      req.headers.emplace_back("x-amz-trailer", "x-amz-checksum-crc32c");
      signed_headers += ";x-amz-trailer";
    } else {
      req.headers.emplace_back("content-length", "66824");
      signed_headers = "content-encoding;content-length;" + signed_headers.substr(17);
    }
    req.headers.emplace_back("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/" +
                                                  std::string(kDocScope) + ",SignedHeaders=" +
                                                  signed_headers + ",Signature=" + ex.seed);
    const SecretLookup lookup = [](std::string_view) {
      return std::optional<std::string>(kDocSecret);
    };
    const auto now = std::chrono::sys_days{std::chrono::year{2013} / 5 / 24};
    Result<VerifiedRequest> v = VerifyRequest(req, lookup, now);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    REQUIRE(v->chunk_signing.has_value());
    CHECK(v->chunk_signing->seed_signature == ex.seed);
    CHECK(v->chunk_signing->scope == kDocScope);
    CHECK(v->chunk_signing->amz_date == kDocDate);
    CHECK(v->chunk_signing->signing_key == DocContext(ex).signing_key);
  }
}

TEST_CASE("aws-chunked: the documented bodies decode, in any split") {
  for (const bool trailer : {false, true}) {
    for (const size_t step : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
      CAPTURE(trailer);
      CAPTURE(step);
      const DocExample& ex = trailer ? kTrailer : kPlain;
      AwsChunkedDecoder d = trailer ? Make(PayloadClaim::kStreamingSignedTrailer, DocContext(ex),
                                           "x-amz-checksum-crc32c")
                                    : Make(PayloadClaim::kStreamingSigned, DocContext(ex));
      std::string out;
      const std::string body = DocBody(ex);
      if (!trailer) CHECK(body.size() == 66824);  // the documented Content-Length
      Status st = Decode(d, body, step, &out);
      REQUIRE_MESSAGE(st.ok(), st.ToString());
      CHECK(out == std::string(66560, 'a'));
    }
  }
}

TEST_CASE("aws-chunked: a wrong chunk or trailer signature is SignatureDoesNotMatch") {
  struct Case {
    const char* name;
    std::string body;
  };
  const std::string good = DocBody(kPlain);
  std::string zero_sig = good;
  zero_sig.replace(zero_sig.find(kPlain.chunks[0]), 64, std::string(64, '0'));
  std::string bad_final = good;
  bad_final.replace(bad_final.find(kPlain.chunks[2]), 64, kPlain.chunks[1]);
  std::string flipped_data = good;
  flipped_data[100] = 'b';
  // The 1 KiB chunk and the final chunk swapped with their signatures: the chain breaks.
  std::string reordered = "10000;chunk-signature=" + kPlain.chunks[0] + "\r\n" +
                          std::string(65536, 'a') + "\r\n0;chunk-signature=" + kPlain.chunks[2] +
                          "\r\n\r\n";
  for (const Case& c : {Case{"zero signature", zero_sig}, Case{"final chunk", bad_final},
                        Case{"data changed", flipped_data}, Case{"chunk dropped", reordered}}) {
    CAPTURE(c.name);
    AwsChunkedDecoder d = Make(PayloadClaim::kStreamingSigned, DocContext(kPlain));
    std::string out;
    Status st = Decode(d, c.body, 4096, &out);
    REQUIRE_FALSE(st.ok());
    CHECK(st.detail().s3_code == "SignatureDoesNotMatch");
    CHECK(st.detail().http_status == 403);
  }
  SUBCASE("the trailer signature") {
    std::string body = DocBody(kTrailer);
    body.replace(body.find("d81f82fc"), 8, "d81f82fd");
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingSignedTrailer, DocContext(kTrailer), "x-amz-checksum-crc32c");
    std::string out;
    Status st = Decode(d, body, 4096, &out);
    CHECK(st.detail().s3_code == "SignatureDoesNotMatch");
  }
  SUBCASE("a signed trailer without its signature") {
    std::string body = DocBody(kTrailer);
    const size_t at = body.find("x-amz-trailer-signature");
    body.erase(at, body.find("\r\n", at) + 2 - at);
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingSignedTrailer, DocContext(kTrailer), "x-amz-checksum-crc32c");
    std::string out;
    CHECK(Decode(d, body, 4096, &out).detail().s3_code == "SignatureDoesNotMatch");
  }
  SUBCASE("a chunk without a signature") {
    AwsChunkedDecoder d = Make(PayloadClaim::kStreamingSigned, DocContext(kPlain));
    std::string out;
    CHECK(Decode(d, "3\r\nabc\r\n0\r\n\r\n", 4096, &out).detail().s3_code == "IncompleteBody");
  }
}

TEST_CASE("aws-chunked: unsigned trailer checksums are verified") {
  // CRC32("abc") = 0x352441C2.
  const std::string body = "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n";
  {
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt, "x-amz-checksum-crc32");
    std::string out;
    Status st = Decode(d, body, 2, &out);
    CHECK_MESSAGE(st.ok(), st.ToString());
    CHECK(out == "abc");
  }
  {
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt, "x-amz-checksum-crc32");
    std::string out;
    std::string other = body;
    other[3] = 'x';  // "xbc"
    Status st = Decode(d, other, 4096, &out);
    CHECK(st.detail().s3_code == "BadDigest");
    CHECK(st.detail().http_status == 400);
  }
  {  // a trailer that was not declared
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt, "x-amz-checksum-crc32c");
    std::string out;
    CHECK(Decode(d, body, 4096, &out).detail().s3_code == "InvalidRequest");
  }
  {  // the declared trailer missing
    AwsChunkedDecoder d =
        Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt, "x-amz-checksum-crc32");
    std::string out;
    CHECK(Decode(d, "3\r\nabc\r\n0\r\n\r\n", 4096, &out).detail().s3_code == "InvalidRequest");
  }
}

// The fuzz target's split property (tests/fuzz aws_chunked) found an earlier decoder that skipped
// bytes between a chunk's data and its CRLF when they came in the same read as the LF.
TEST_CASE("aws-chunked: anything but CRLF after a chunk's data is refused, split at any size") {
  for (std::string_view bad :
       {"3\r\nabcXY\r\n0\r\n\r\n", "3\r\nabc\r\r\n0\r\n\r\n", "3\r\nabc \n0\r\n\r\n"}) {
    for (size_t step = 1; step <= bad.size(); ++step) {
      CAPTURE(bad);
      CAPTURE(step);
      AwsChunkedDecoder d = Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt);
      std::string out;
      CHECK(Decode(d, bad, step, &out).detail().s3_code == "IncompleteBody");
    }
  }
}

TEST_CASE("aws-chunked: framing errors and impossible options") {
  for (const char* body :
       {"zz\r\nabc\r\n0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n", "3\r\nab", "3;foo=bar\r\nabc\r\n",
        "3\r\nabc\r\n0\r\n\r\nextra", "ffffffffffffffffff\r\n"}) {
    CAPTURE(body);
    AwsChunkedDecoder d = Make(PayloadClaim::kStreamingUnsignedTrailer, std::nullopt);
    std::string out;
    Status st = Decode(d, body, 4096, &out);
    REQUIRE_FALSE(st.ok());
    CHECK(st.detail().s3_code == "IncompleteBody");
  }
  // Signed chunks with nothing to chain from (a presigned URL): refused up front.
  CHECK_FALSE(AwsChunkedDecoder::Create({.claim = PayloadClaim::kStreamingSigned}).ok());
  // A trailer on a body that has none, or an unknown trailer.
  CHECK_FALSE(AwsChunkedDecoder::Create({.claim = PayloadClaim::kStreamingSigned,
                                         .signing = DocContext(kPlain),
                                         .declared_trailer = "x-amz-checksum-crc32"})
                  .ok());
  CHECK_FALSE(AwsChunkedDecoder::Create({.claim = PayloadClaim::kStreamingUnsignedTrailer,
                                         .declared_trailer = "x-amz-meta-foo"})
                  .ok());
}

TEST_CASE("checksum: the published check values of each algorithm") {
  const std::string check = "123456789";
  auto b64 = [&](Checksum::Algorithm a, std::string_view data) {
    Checksum c(a);
    c.Update(data.substr(0, data.size() / 2));  // incremental: two pieces
    c.Update(data.substr(data.size() / 2));
    return c.FinishBase64();
  };
  auto be = [](uint64_t v, int bytes) {
    std::string s;
    for (int i = bytes - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return Base64Encode(s);
  };
  CHECK(b64(Checksum::Algorithm::kCrc32, check) == be(0xCBF43926, 4));
  CHECK(b64(Checksum::Algorithm::kCrc32c, check) == be(0xE3069283, 4));
  CHECK(b64(Checksum::Algorithm::kCrc64Nvme, check) == be(0xAE8B14860A799888ull, 8));
  CHECK(b64(Checksum::Algorithm::kSha256, check) == Base64Encode(Sha256(check)));
  CHECK(b64(Checksum::Algorithm::kSha1, "abc") == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
  CHECK(Checksum::FromHeaderName("X-Amz-Checksum-CRC32C") == Checksum::Algorithm::kCrc32c);
  CHECK_FALSE(Checksum::FromHeaderName("x-amz-checksum-md5").has_value());
}

}  // namespace
}  // namespace reelfs::s3

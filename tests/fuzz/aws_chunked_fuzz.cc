// aws-chunked body decoder (s3/protocol/aws_chunked.h). The first byte picks the claim (signed
// with a fixed signing context, or unsigned with or without a declared CRC32 trailer) and a split
// size: the body is fed in pieces of that many bytes, as the HTTP server hands it over.
// Property: the decoded bytes and the verdicts of Feed and Finish do not depend on the split.
#include "s3/protocol/aws_chunked.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

struct Outcome {
  bool ok = true;
  bool finished = false;
  std::string out;
};

reelfs::s3::AwsChunkedOptions OptionsFor(uint8_t mode) {
  reelfs::s3::AwsChunkedOptions o;
  switch (mode % 3) {
    case 0:
      o.claim = reelfs::s3::PayloadClaim::kStreamingSigned;
      o.signing = reelfs::s3::ChunkSigningContext{.signing_key = std::string(32, 'k'),
                                                  .amz_date = "20130524T000000Z",
                                                  .scope = "20130524/us-east-1/s3/aws4_request",
                                                  .seed_signature = std::string(64, '0')};
      break;
    case 1:
      o.claim = reelfs::s3::PayloadClaim::kStreamingUnsignedTrailer;
      o.declared_trailer = "x-amz-checksum-crc32";
      break;
    default:
      o.claim = reelfs::s3::PayloadClaim::kStreamingUnsignedTrailer;
      break;
  }
  return o;
}

Outcome Decode(uint8_t mode, std::string_view body, size_t piece) {
  Outcome o;
  auto decoder = reelfs::s3::AwsChunkedDecoder::Create(OptionsFor(mode));
  if (!decoder.ok()) {
    o.ok = false;
    return o;
  }
  while (!body.empty() && o.ok) {
    std::string_view chunk = body.substr(0, piece);
    body.remove_prefix(chunk.size());
    o.ok = decoder->Feed(chunk, &o.out).ok();
  }
  if (o.ok) o.finished = decoder->Finish().ok();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] >> 6;
  const size_t piece = 1 + data[0] % 64;
  std::string_view body = reelfs::fuzz::AsView(data + 1, size - 1);
  Outcome whole = Decode(mode, body, body.size() + 1);
  Outcome split = Decode(mode, body, piece);
  REELFS_FUZZ_CHECK(whole.ok == split.ok);
  if (whole.ok) {
    REELFS_FUZZ_CHECK(whole.finished == split.finished);
    REELFS_FUZZ_CHECK(whole.out == split.out);
    REELFS_FUZZ_CHECK(whole.out.size() <= body.size());
  }
  return 0;
}

// The aws-chunked body of an S3 upload (x-amz-content-sha256: STREAMING-*), decoded and checked:
//
//   <hex size>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
//   [<trailer name>:<value>\r\n ... [x-amz-trailer-signature:<sig>\r\n]]\r\n
//
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]: every chunk signature (the final empty chunk's
// too) must chain from the request's seed signature, and a trailer is signed after the last one.
// STREAMING-UNSIGNED-PAYLOAD-TRAILER: no signatures. With a declared trailer (x-amz-trailer:
// x-amz-checksum-<alg>) the checksum it carries must match the decoded data.
//
// Errors carry detail().s3_code and http_status: IncompleteBody (400, framing),
// SignatureDoesNotMatch (403), BadDigest (400, checksum), InvalidRequest (400, trailers other
// than the declared one), InvalidArgument (400, options that cannot go together).
//
// Thread-safety: single owner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/protocol/checksum.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {

struct AwsChunkedOptions {
  PayloadClaim claim = PayloadClaim::kStreamingSigned;  // one of the STREAMING-* forms
  std::optional<ChunkSigningContext> signing;           // required by the signed forms
  std::string declared_trailer;                         // x-amz-trailer, "" when absent
};

class AwsChunkedDecoder {
 public:
  static Result<AwsChunkedDecoder> Create(AwsChunkedOptions options);

  // Appends decoded payload bytes to *out. After an error the decoder stays failed.
  Status Feed(std::string_view in, std::string* out);
  // The body ended: the final chunk (and the trailers) must have been seen and verified.
  Status Finish();

 private:
  enum class State { kHeader, kData, kDataEnd, kTrailer, kDone, kFailed };
  explicit AwsChunkedDecoder(AwsChunkedOptions options);
  Status Fail(Status st);
  Status ChunkHeader(std::string_view line);
  Status ChunkDone();
  Status TrailerLine(std::string_view line);
  Status TrailersDone();

  AwsChunkedOptions options_;
  std::optional<Checksum> checksum_;
  std::optional<Digest> chunk_sha256_;
  State state_ = State::kHeader;
  std::string line_;
  uint64_t remaining_ = 0;
  bool saw_cr_ = false;
  std::string previous_signature_;
  std::string claimed_signature_;
  std::string trailer_text_;                  // "name:value\n" per trailer line, as signed
  std::optional<std::string> trailer_value_;  // the declared checksum's value
  std::optional<std::string> trailer_signature_;
  int trailer_lines_ = 0;
};

}  // namespace reelfs::s3

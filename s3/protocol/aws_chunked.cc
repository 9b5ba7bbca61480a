#include "s3/protocol/aws_chunked.h"

#include <algorithm>
#include <charconv>

#include "common/strings.h"

namespace reelfs::s3 {
namespace {

// A chunk header is "<16 hex digits at most>;chunk-signature=<64 hex>"; trailer lines are a
// checksum or a signature. Anything longer is not an aws-chunked body.
constexpr size_t kMaxLine = 4096;
constexpr int kMaxTrailerLines = 8;
constexpr std::string_view kSignatureExt = "chunk-signature=";
constexpr std::string_view kTrailerSignature = "x-amz-trailer-signature";

Status Error(StatusCode code, int http, std::string_view s3_code, std::string message) {
  return Status(code, std::move(message),
                StatusDetail{.http_status = http, .s3_code = std::string(s3_code)});
}
Status Framing(std::string message) {
  return Error(StatusCode::kInvalidArgument, 400, "IncompleteBody",
               "malformed aws-chunked body: " + std::move(message));
}
Status BadSignature(std::string_view what) {
  return Error(StatusCode::kUnauthenticated, 403, "SignatureDoesNotMatch",
               "the " + std::string(what) +
                   " signature we calculated does not match the signature you provided");
}
Status BadTrailer(std::string message) {
  return Error(StatusCode::kInvalidArgument, 400, "InvalidRequest", std::move(message));
}

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool Signed(PayloadClaim c) {
  return c == PayloadClaim::kStreamingSigned || c == PayloadClaim::kStreamingSignedTrailer;
}
bool HasTrailer(PayloadClaim c) {
  return c == PayloadClaim::kStreamingSignedTrailer || c == PayloadClaim::kStreamingUnsignedTrailer;
}

}  // namespace

Result<AwsChunkedDecoder> AwsChunkedDecoder::Create(AwsChunkedOptions options) {
  if (!IsStreamingClaim(options.claim)) {
    return Error(StatusCode::kInvalidArgument, 400, "InvalidArgument",
                 "not an aws-chunked payload claim");
  }
  if (Signed(options.claim) && !options.signing) {
    // A presigned URL, or no signature at all: nothing for the chunk signatures to chain from.
    return Error(StatusCode::kInvalidArgument, 400, "InvalidArgument",
                 "signed aws-chunked bodies need an Authorization header to chain from");
  }
  if (!options.declared_trailer.empty()) {
    if (!HasTrailer(options.claim)) {
      return BadTrailer("x-amz-trailer needs x-amz-content-sha256 STREAMING-*-TRAILER");
    }
    options.declared_trailer = Lower(Trim(options.declared_trailer));
    if (!Checksum::FromHeaderName(options.declared_trailer)) {
      return BadTrailer("x-amz-trailer: unsupported trailer " + options.declared_trailer);
    }
  }
  return AwsChunkedDecoder(std::move(options));
}

AwsChunkedDecoder::AwsChunkedDecoder(AwsChunkedOptions options) : options_(std::move(options)) {
  if (auto alg = Checksum::FromHeaderName(options_.declared_trailer)) checksum_.emplace(*alg);
  if (options_.signing) previous_signature_ = options_.signing->seed_signature;
}

Status AwsChunkedDecoder::Fail(Status st) {
  state_ = State::kFailed;
  return st;
}

Status AwsChunkedDecoder::Feed(std::string_view in, std::string* out) {
  if (state_ == State::kFailed) return Framing("decoding already failed");
  while (!in.empty()) {
    switch (state_) {
      case State::kHeader:
      case State::kTrailer: {
        const size_t nl = in.find('\n');
        line_.append(in.substr(0, nl));
        if (line_.size() > kMaxLine) return Fail(Framing("line too long"));
        if (nl == std::string_view::npos) return Status::Ok();
        in.remove_prefix(nl + 1);
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        const std::string line = std::move(line_);
        line_.clear();
        Status st = state_ == State::kHeader ? ChunkHeader(line) : TrailerLine(line);
        if (!st.ok()) return Fail(std::move(st));
        break;
      }
      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
        const std::string_view data = in.substr(0, n);
        out->append(data);
        if (chunk_sha256_) chunk_sha256_->Update(data);
        if (checksum_) checksum_->Update(data);
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
          Status st = ChunkDone();
          if (!st.ok()) return Fail(std::move(st));
          state_ = State::kDataEnd;
          saw_cr_ = false;
        }
        break;
      }
      case State::kDataEnd: {  // the CRLF after a chunk's data
        const char c = in.front();
        in.remove_prefix(1);
        if (c == '\r' && !saw_cr_) {
          saw_cr_ = true;
        } else if (c == '\n') {
          state_ = State::kHeader;
        } else {
          return Fail(Framing("chunk data longer than its size"));
        }
        break;
      }
      case State::kDone:
        return Fail(Framing("data after the end of the body"));
      case State::kFailed:
        return Framing("decoding already failed");
    }
  }
  return Status::Ok();
}

Status AwsChunkedDecoder::ChunkHeader(std::string_view line) {
  const size_t semi = line.find(';');
  const std::string_view hex = line.substr(0, semi);
  uint64_t size = 0;
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
  if (hex.empty() || ec != std::errc() || p != hex.data() + hex.size()) {
    return Framing("bad chunk size");
  }
  claimed_signature_.clear();
  if (semi != std::string_view::npos) {
    const std::string_view ext = line.substr(semi + 1);
    if (!ext.starts_with(kSignatureExt)) return Framing("unknown chunk extension");
    claimed_signature_ = std::string(ext.substr(kSignatureExt.size()));
    if (claimed_signature_.size() != 64 || !IsLowerHex(claimed_signature_)) {
      return Framing("malformed chunk-signature");
    }
  }
  if (options_.signing && claimed_signature_.empty()) return Framing("chunk without signature");
  remaining_ = size;
  if (options_.signing) chunk_sha256_.emplace(Digest::Algorithm::kSha256);
  if (size > 0) {
    state_ = State::kData;
    return Status::Ok();
  }
  REELFS_RETURN_IF_ERROR(ChunkDone());  // the final chunk is signed like the others
  // Without trailers the body ends with one empty line; TrailerLine handles both.
  state_ = State::kTrailer;
  return Status::Ok();
}

Status AwsChunkedDecoder::ChunkDone() {
  if (!options_.signing) return Status::Ok();
  const std::string expected =
      ChunkSignature(*options_.signing, previous_signature_, HexEncode(chunk_sha256_->Finish()));
  chunk_sha256_.reset();
  if (!ConstantTimeEquals(expected, claimed_signature_)) return BadSignature("chunk");
  previous_signature_ = claimed_signature_;
  return Status::Ok();
}

Status AwsChunkedDecoder::TrailerLine(std::string_view line) {
  if (line.empty()) return TrailersDone();
  if (!HasTrailer(options_.claim)) return Framing("trailer after the final chunk");
  if (++trailer_lines_ > kMaxTrailerLines) return BadTrailer("too many trailers");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Framing("malformed trailer");
  const std::string name = Lower(Trim(line.substr(0, colon)));
  const std::string_view value = Trim(line.substr(colon + 1));
  if (name == kTrailerSignature) {
    if (trailer_signature_) return BadTrailer("repeated " + name);
    trailer_signature_ = std::string(value);
    return Status::Ok();
  }
  if (trailer_signature_) return BadTrailer("trailer after x-amz-trailer-signature");
  if (name != options_.declared_trailer) {
    return BadTrailer("trailer " + name + " was not declared in x-amz-trailer");
  }
  if (trailer_value_) return BadTrailer("repeated trailer " + name);
  trailer_value_ = std::string(value);
  trailer_text_ += name;
  trailer_text_.push_back(':');
  trailer_text_ += value;
  trailer_text_.push_back('\n');
  return Status::Ok();
}

Status AwsChunkedDecoder::TrailersDone() {
  if (HasTrailer(options_.claim) && options_.signing) {
    if (!trailer_signature_) return BadSignature("trailer (none was sent)");
    const std::string expected =
        TrailerSignature(*options_.signing, previous_signature_, Sha256Hex(trailer_text_));
    if (!ConstantTimeEquals(expected, *trailer_signature_)) return BadSignature("trailer");
  } else if (trailer_signature_) {
    return BadTrailer("x-amz-trailer-signature on an unsigned body");
  }
  if (checksum_) {
    if (!trailer_value_) {
      return BadTrailer("the declared trailer " + options_.declared_trailer + " was not sent");
    }
    if (checksum_->FinishBase64() != *trailer_value_) {
      return Error(StatusCode::kInvalidArgument, 400, "BadDigest",
                   "The " + options_.declared_trailer +
                       " you specified did not match the calculated checksum.");
    }
  }
  state_ = State::kDone;
  return Status::Ok();
}

Status AwsChunkedDecoder::Finish() {
  if (state_ == State::kFailed) return Framing("decoding failed");
  if (state_ == State::kDone) return Status::Ok();
  // Some clients end the body right after the final chunk (or the last trailer) without the
  // closing empty line; everything signed has been seen by then.
  if (state_ == State::kTrailer && line_.empty()) {
    Status st = TrailersDone();
    if (!st.ok()) return Fail(std::move(st));
    return Status::Ok();
  }
  return Fail(Framing("the body ended before the final chunk"));
}

}  // namespace reelfs::s3

// Request-body exchanges: streamed uploads into a temporary file, and small XML bodies.
#include <charconv>

#include "gateway/s3api/internal.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway::s3api {
namespace {

constexpr std::string_view kStreamingSigned = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

// Decodes aws-chunked framing: "<hex size>[;chunk-signature=...]\r\n<data>\r\n" ... "0;...\r\n"
// followed by optional trailers. Chunk signatures are not verified (docs/gateway.md).
class AwsChunkedDecoder {
 public:
  // Appends decoded payload bytes to *out; false on malformed framing.
  bool Feed(std::string_view in, std::string* out) {
    while (!in.empty()) {
      switch (state_) {
        case State::kHeader: {
          size_t nl = in.find('\n');
          line_.append(in.substr(0, nl));
          if (line_.size() > 4096) return false;
          if (nl == std::string_view::npos) return true;
          in.remove_prefix(nl + 1);
          if (!line_.empty() && line_.back() == '\r') line_.pop_back();
          std::string_view hex = std::string_view(line_).substr(0, line_.find(';'));
          uint64_t size = 0;
          auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
          if (ec != std::errc() || p != hex.data() + hex.size() || hex.empty()) return false;
          line_.clear();
          remaining_ = size;
          state_ = size == 0 ? State::kDone : State::kData;
          break;
        }
        case State::kData: {
          size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
          out->append(in.substr(0, n));
          in.remove_prefix(n);
          remaining_ -= n;
          if (remaining_ == 0) state_ = State::kCrlf;
          break;
        }
        case State::kCrlf: {
          size_t nl = in.find('\n');
          if (nl == std::string_view::npos) return in.find_first_not_of('\r') == in.npos;
          in.remove_prefix(nl + 1);
          state_ = State::kHeader;
          break;
        }
        case State::kDone:
          return true;  // trailers (x-amz-checksum-*, x-amz-trailer-signature) are ignored
      }
    }
    return true;
  }
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kHeader, kData, kCrlf, kDone };
  State state_ = State::kHeader;
  std::string line_;
  uint64_t remaining_ = 0;
};

// Hash and size checks shared by both exchanges.
class BodyChecks {
 public:
  explicit BodyChecks(const S3Request& req)
      : sha256_(s3::Digest::Algorithm::kSha256), md5_(s3::Digest::Algorithm::kMd5) {
    const std::string& claim = req.auth.payload_hash;
    check_sha256_ = claim.size() == 64 && claim.find_first_not_of("0123456789abcdef") == claim.npos;
    if (const std::string* md5 = req.Header("content-md5")) content_md5_ = *md5;
  }
  void Update(std::string_view decoded, std::string_view raw) {
    if (check_sha256_) sha256_.Update(raw);
    md5_.Update(decoded);
  }
  // Returns the hex MD5 of the decoded body, or the error to answer.
  Result<std::string> Finish(const S3Request& req) {
    std::string md5 = md5_.Finish();
    if (check_sha256_ && s3::HexEncode(sha256_.Finish()) != req.auth.payload_hash) {
      return S3CodeError(StatusCode::kInvalidArgument, "XAmzContentSHA256Mismatch", 400,
                         "The provided 'x-amz-content-sha256' header does not match what was "
                         "computed.");
    }
    if (!content_md5_.empty() && s3::Base64Encode(md5) != content_md5_) {
      return S3CodeError(StatusCode::kInvalidArgument, "BadDigest", 400,
                         "The Content-MD5 you specified did not match what we received.");
    }
    return s3::HexEncode(md5);
  }

 private:
  s3::Digest sha256_;
  s3::Digest md5_;
  bool check_sha256_ = false;
  std::string content_md5_;
};

bool IsAwsChunked(const S3Request& req) {
  const std::string& claim = req.auth.payload_hash;
  return claim == kStreamingSigned || claim == kStreamingUnsignedTrailer ||
         claim.starts_with("STREAMING-");
}

class UploadExchange : public http::Exchange {
 public:
  UploadExchange(Context ctx, S3Request req, TmpFile tmp, UploadDone done)
      : ctx_(ctx),
        req_(std::move(req)),
        tmp_(std::move(tmp)),
        done_(std::move(done)),
        checks_(req_),
        chunked_(IsAwsChunked(req_)) {}

  void OnBody(std::string_view chunk) override {
    if (!error_.ok()) return;
    std::string_view payload = chunk;
    if (chunked_) {
      decoded_.clear();
      if (!decoder_.Feed(chunk, &decoded_)) {
        error_ = S3CodeError(StatusCode::kInvalidArgument, "IncompleteBody", 400,
                             "malformed aws-chunked body");
        return;
      }
      payload = decoded_;
    }
    checks_.Update(payload, chunk);
    if (tmp_.size() + payload.size() > ctx_.options.max_put_size) {
      error_ = S3CodeError(StatusCode::kInvalidArgument, "EntityTooLarge", 400,
                           "Your proposed upload exceeds the maximum allowed object size.");
      return;
    }
    error_ = tmp_.Write(payload);
  }

  http::Response Finish() override {
    if (error_.ok() && chunked_ && !decoder_.done()) {
      error_ = S3CodeError(StatusCode::kInvalidArgument, "IncompleteBody", 400,
                           "aws-chunked body ended before the final chunk");
    }
    if (!error_.ok()) return ErrorResponse(req_, error_);
    if (chunked_) {
      if (const std::string* dl = req_.Header("x-amz-decoded-content-length")) {
        if (*dl != std::to_string(tmp_.size())) {
          return ErrorResponse(req_, "IncompleteBody",
                               "decoded length differs from x-amz-decoded-content-length", 400);
        }
      }
    }
    auto md5 = checks_.Finish(req_);
    if (!md5.ok()) return ErrorResponse(req_, md5.status());
    return done_(req_, tmp_, UploadResult{*md5, tmp_.size()});
  }

 private:
  Context ctx_;
  S3Request req_;
  TmpFile tmp_;
  UploadDone done_;
  BodyChecks checks_;
  bool chunked_;
  AwsChunkedDecoder decoder_;
  std::string decoded_;
  Status error_;
};

class BufferedExchange : public http::Exchange {
 public:
  BufferedExchange(Context ctx, S3Request req, BufferedDone done)
      : ctx_(ctx), req_(std::move(req)), done_(std::move(done)), checks_(req_) {}

  void OnBody(std::string_view chunk) override {
    if (too_big_) return;
    if (body_.size() + chunk.size() > ctx_.options.max_xml_body) {
      too_big_ = true;
      body_.clear();
      return;
    }
    checks_.Update(chunk, chunk);
    body_.append(chunk);
  }

  http::Response Finish() override {
    if (too_big_) {
      return ErrorResponse(req_, "MaxMessageLengthExceeded", "Your request was too big.", 400);
    }
    auto md5 = checks_.Finish(req_);
    if (!md5.ok()) return ErrorResponse(req_, md5.status());
    return done_(req_, std::move(body_));
  }

 private:
  Context ctx_;
  S3Request req_;
  BufferedDone done_;
  BodyChecks checks_;
  std::string body_;
  bool too_big_ = false;
};

}  // namespace

Started StartUpload(Context ctx, S3Request req, std::string_view purpose, UploadDone done) {
  if (const std::string* len = req.Header("content-length")) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(len->data(), len->data() + len->size(), n);
    if (ec == std::errc() && n > ctx.options.max_put_size + (IsAwsChunked(req) ? n / 2 : 0)) {
      return ErrorResponse(req, "EntityTooLarge",
                           "Your proposed upload exceeds the maximum allowed object size.", 400);
    }
  }
  auto tmp = ctx.store.fs().CreateTmp(purpose);
  if (!tmp.ok()) return ErrorResponse(req, tmp.status());
  if (!req.http.has_body) {
    // No body at all: finish right away on an empty file.
    UploadExchange ex(ctx, std::move(req), std::move(*tmp), std::move(done));
    return ex.Finish();
  }
  return std::make_unique<UploadExchange>(ctx, std::move(req), std::move(*tmp), std::move(done));
}

Started StartBuffered(Context ctx, S3Request req, BufferedDone done) {
  if (!req.http.has_body) {
    BufferedExchange ex(ctx, std::move(req), std::move(done));
    return ex.Finish();
  }
  return std::make_unique<BufferedExchange>(ctx, std::move(req), std::move(done));
}

}  // namespace reelfs::gateway::s3api

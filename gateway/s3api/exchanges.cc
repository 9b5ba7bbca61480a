// Request-body exchanges: streamed uploads into a temporary file, and small XML bodies.
#include <cctype>
#include <charconv>

#include "common/strings.h"
#include "gateway/s3api/internal.h"
#include "s3/protocol/aws_chunked.h"
#include "s3/protocol/checksum.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway::s3api {
namespace {

// Hash and size checks shared by both exchanges.
class BodyChecks {
 public:
  explicit BodyChecks(const S3Request& req)
      : sha256_(s3::Digest::Algorithm::kSha256), md5_(s3::Digest::Algorithm::kMd5) {
    // The claim was validated with the signature (sigv4.h); a hash may come in either case.
    check_sha256_ = s3::ClassifyPayloadClaim(req.auth.payload_hash) == s3::PayloadClaim::kSha256;
    if (check_sha256_) claim_ = Lower(req.auth.payload_hash);
    if (const std::string* md5 = req.Header("content-md5")) content_md5_ = *md5;
    // x-amz-checksum-<algorithm> (what current SDKs send instead of Content-MD5) covers the body,
    // except on CompleteMultipartUpload, where it names the assembled object's checksum.
    const bool complete = req.http.method == "POST" && req.Has("uploadId");
    for (const auto& [name, value] : req.http.headers) {
      std::optional<s3::Checksum::Algorithm> alg = s3::Checksum::FromHeaderName(name);
      if (!alg || complete) continue;
      if (checksum_) {
        setup_error_ = S3CodeError(StatusCode::kInvalidArgument, "InvalidRequest", 400,
                                   "Expecting a single x-amz-checksum- header");
        break;
      }
      checksum_.emplace(*alg);
      checksum_name_ = name;
      checksum_value_ = value;
    }
  }
  void Update(std::string_view decoded, std::string_view raw) {
    if (check_sha256_) sha256_.Update(raw);
    md5_.Update(decoded);
    if (checksum_) checksum_->Update(decoded);
  }
  // Returns the hex MD5 of the decoded body, or the error to answer.
  Result<std::string> Finish() {
    REELFS_RETURN_IF_ERROR(setup_error_);
    std::string md5 = md5_.Finish();
    if (check_sha256_ && s3::HexEncode(sha256_.Finish()) != claim_) {
      return S3CodeError(StatusCode::kInvalidArgument, "XAmzContentSHA256Mismatch", 400,
                         "The provided 'x-amz-content-sha256' header does not match what was "
                         "computed.");
    }
    if (!content_md5_.empty() && s3::Base64Encode(md5) != content_md5_) {
      return S3CodeError(StatusCode::kInvalidArgument, "BadDigest", 400,
                         "The Content-MD5 you specified did not match what we received.");
    }
    if (checksum_ && checksum_->FinishBase64() != checksum_value_) {
      return S3CodeError(
          StatusCode::kInvalidArgument, "BadDigest", 400,
          "The " + checksum_name_ + " you specified did not match the calculated checksum.");
    }
    return s3::HexEncode(md5);
  }

 private:
  s3::Digest sha256_;
  s3::Digest md5_;
  bool check_sha256_ = false;
  std::string claim_;  // lower case
  std::string content_md5_;
  std::optional<s3::Checksum> checksum_;
  std::string checksum_name_;
  std::string checksum_value_;
  Status setup_error_;
};

bool IsAwsChunked(const S3Request& req) {
  return s3::IsStreamingClaim(s3::ClassifyPayloadClaim(req.auth.payload_hash));
}

// The decoder for an aws-chunked body (signatures chained from the request's, the declared
// trailer checked); nullopt for any other body.
Result<std::optional<s3::AwsChunkedDecoder>> DecoderFor(const S3Request& req) {
  if (!IsAwsChunked(req)) return std::optional<s3::AwsChunkedDecoder>();
  s3::AwsChunkedOptions options;
  options.claim = s3::ClassifyPayloadClaim(req.auth.payload_hash);
  options.signing = req.auth.chunk_signing;
  if (const std::string* trailer = req.Header("x-amz-trailer")) options.declared_trailer = *trailer;
  REELFS_ASSIGN_OR_RETURN(s3::AwsChunkedDecoder decoder,
                          s3::AwsChunkedDecoder::Create(std::move(options)));
  return std::optional<s3::AwsChunkedDecoder>(std::move(decoder));
}

class UploadExchange : public http::Exchange {
 public:
  UploadExchange(Context ctx, S3Request req, TmpFile tmp, UploadDone done,
                 std::optional<s3::AwsChunkedDecoder> decoder)
      : ctx_(ctx),
        req_(std::move(req)),
        tmp_(std::move(tmp)),
        done_(std::move(done)),
        checks_(req_),
        chunked_(decoder.has_value()),
        decoder_(std::move(decoder)) {}

  void OnBody(std::string_view chunk) override {
    if (!error_.ok()) return;
    std::string_view payload = chunk;
    if (chunked_) {
      decoded_.clear();
      error_ = decoder_->Feed(chunk, &decoded_);
      if (!error_.ok()) return;
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
    // Every chunk signature and the trailer were verified before anything is stored.
    if (error_.ok() && chunked_) error_ = decoder_->Finish();
    if (!error_.ok()) return ErrorResponse(req_, error_);
    if (chunked_) {
      if (const std::string* dl = req_.Header("x-amz-decoded-content-length")) {
        if (*dl != std::to_string(tmp_.size())) {
          return ErrorResponse(req_, "IncompleteBody",
                               "decoded length differs from x-amz-decoded-content-length", 400);
        }
      }
    }
    auto md5 = checks_.Finish();
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
  std::optional<s3::AwsChunkedDecoder> decoder_;
  std::string decoded_;
  Status error_;
};

class BufferedExchange : public http::Exchange {
 public:
  BufferedExchange(Context ctx, S3Request req, BufferedDone done,
                   std::optional<s3::AwsChunkedDecoder> decoder)
      : ctx_(ctx),
        req_(std::move(req)),
        done_(std::move(done)),
        checks_(req_),
        decoder_(std::move(decoder)) {}

  void OnBody(std::string_view chunk) override {
    if (too_big_ || !error_.ok()) return;
    std::string_view payload = chunk;
    if (decoder_) {
      decoded_.clear();
      error_ = decoder_->Feed(chunk, &decoded_);
      if (!error_.ok()) return;
      payload = decoded_;
    }
    if (body_.size() + payload.size() > ctx_.options.max_xml_body) {
      too_big_ = true;
      body_.clear();
      return;
    }
    checks_.Update(payload, chunk);
    body_.append(payload);
  }

  http::Response Finish() override {
    if (too_big_) {
      return ErrorResponse(req_, "MaxMessageLengthExceeded", "Your request was too big.", 400);
    }
    // An aws-chunked XML body is verified like an upload's before it is acted on.
    if (error_.ok() && decoder_) error_ = decoder_->Finish();
    if (!error_.ok()) return ErrorResponse(req_, error_);
    auto md5 = checks_.Finish();
    if (!md5.ok()) return ErrorResponse(req_, md5.status());
    return done_(req_, std::move(body_));
  }

 private:
  Context ctx_;
  S3Request req_;
  BufferedDone done_;
  BodyChecks checks_;
  std::optional<s3::AwsChunkedDecoder> decoder_;
  std::string decoded_;
  std::string body_;
  bool too_big_ = false;
  Status error_;
};

}  // namespace

Started StartUpload(Context ctx, S3Request req, std::string_view purpose, UploadDone done) {
  return StartUpload(
      ctx, std::move(req),
      [fs = &ctx.store.fs(), purpose](std::optional<uint64_t>) { return fs->CreateTmp(purpose); },
      std::move(done));
}

Started StartUpload(Context ctx, S3Request req, const UploadTarget& make_target, UploadDone done) {
  std::optional<uint64_t> declared;
  if (const std::string* len = req.Header("content-length")) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(len->data(), len->data() + len->size(), n);
    if (ec == std::errc() && n > ctx.options.max_put_size + (IsAwsChunked(req) ? n / 2 : 0)) {
      return ErrorResponse(req, "EntityTooLarge",
                           "Your proposed upload exceeds the maximum allowed object size.", 400);
    }
    if (ec == std::errc() && p == len->data() + len->size() && !IsAwsChunked(req)) declared = n;
  }
  if (const std::string* dl = req.Header("x-amz-decoded-content-length");
      dl != nullptr && IsAwsChunked(req)) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(dl->data(), dl->data() + dl->size(), n);
    if (ec == std::errc() && p == dl->data() + dl->size()) declared = n;
  }
  if (!req.http.has_body) declared = 0;
  auto decoder = DecoderFor(req);
  if (!decoder.ok()) return ErrorResponse(req, decoder.status());
  auto tmp = make_target(declared);
  if (!tmp.ok()) return ErrorResponse(req, tmp.status());
  if (!req.http.has_body) {
    // No body at all: finish right away on an empty file.
    UploadExchange ex(ctx, std::move(req), std::move(*tmp), std::move(done), std::move(*decoder));
    return ex.Finish();
  }
  return std::make_unique<UploadExchange>(ctx, std::move(req), std::move(*tmp), std::move(done),
                                          std::move(*decoder));
}

Started StartBuffered(Context ctx, S3Request req, BufferedDone done) {
  auto decoder = DecoderFor(req);
  if (!decoder.ok()) return ErrorResponse(req, decoder.status());
  if (!req.http.has_body) {
    BufferedExchange ex(ctx, std::move(req), std::move(done), std::move(*decoder));
    return ex.Finish();
  }
  return std::make_unique<BufferedExchange>(ctx, std::move(req), std::move(done),
                                            std::move(*decoder));
}

}  // namespace reelfs::gateway::s3api

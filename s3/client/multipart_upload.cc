// CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload.
#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::s3 {

void S3Client::CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                                     Callback<std::string> done) {
  HttpRequest r = internal::MakeRequest(
      "POST", req.bucket, req.key, internal::What("CreateMultipartUpload", req.bucket, req.key));
  r.query.emplace_back("uploads", "");
  if (!req.content_type.empty()) r.headers.emplace_back("content-type", req.content_type);
  internal::AddUserMetadata(r, req.user_metadata);
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseInitiateMultipartUploadResult(resp->body);
    if (!parsed.ok())
      return done(internal::ProtocolViolation("CreateMultipartUpload", "unparsable body",
                                              resp->status, parsed.status()));
    if (parsed->upload_id.empty())
      return done(Status::Internal("CreateMultipartUpload: no UploadId"));
    done(std::move(parsed->upload_id));
  });
}

void S3Client::UploadPart(const UploadPartRequest& req, Callback<std::string> done) {
  if (req.part_number < 1 || req.part_number > 10000) {
    done(Status::InvalidArgument("UploadPart: part number must be 1..10000"));
    return;
  }
  HttpRequest r = internal::MakeRequest("PUT", req.bucket, req.key,
                                        internal::What("UploadPart", req.bucket, req.key));
  r.query.emplace_back("partNumber", std::to_string(req.part_number));
  r.query.emplace_back("uploadId", req.upload_id);
  r.body = req.body;
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    const std::string* etag = resp->Header("etag");
    if (etag == nullptr) return done(Status::Internal("UploadPart: response has no ETag"));
    done(StripEtag(*etag));
  });
}

void S3Client::CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                                       Callback<std::string> done) {
  HttpRequest r = internal::MakeRequest(
      "POST", req.bucket, req.key, internal::What("CompleteMultipartUpload", req.bucket, req.key));
  r.query.emplace_back("uploadId", req.upload_id);
  r.owned_body = EncodeCompleteMultipartUpload(req.parts);
  r.headers.emplace_back("content-type", "application/xml");
  r.validate = internal::RejectErrorDocument;
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    // A 200 with an <Error> was turned into a (retryable when the code says so) failure by
    // RejectErrorDocument; the parser still rejects anything else malformed.
    auto parsed = ParseCompleteMultipartUploadResult(resp->body);
    if (!parsed.ok())
      return done(internal::ProtocolViolation("CompleteMultipartUpload", "unparsable body",
                                              resp->status, parsed.status()));
    done(std::move(parsed->etag));
  });
}

void S3Client::AbortMultipartUpload(const AbortMultipartUploadRequest& req, StatusCallback done) {
  HttpRequest r = internal::MakeRequest(
      "DELETE", req.bucket, req.key, internal::What("AbortMultipartUpload", req.bucket, req.key));
  r.query.emplace_back("uploadId", req.upload_id);
  PickTransport().Submit(std::move(r), internal::StatusOnly(std::move(done)));
}

}  // namespace reelfs::s3

// UploadPartCopy: a part of a multipart upload copied by the server from an existing object.
#include <string>

#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/request_codecs.h"
#include "s3/protocol/uri.h"

namespace reelfs::s3 {

void S3Client::UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) {
  if (req.part_number < 1 || req.part_number > 10000) {
    done(Status::InvalidArgument("UploadPartCopy: part number must be 1..10000"));
    return;
  }
  if (req.source_range.has_value() && req.source_range->length == 0) {
    done(Status::InvalidArgument("UploadPartCopy: an empty source range"));
    return;
  }
  HttpRequest r = internal::MakeRequest("PUT", req.bucket, req.key,
                                        internal::What("UploadPartCopy", req.bucket, req.key));
  r.query.emplace_back("partNumber", std::to_string(req.part_number));
  r.query.emplace_back("uploadId", req.upload_id);
  // As CopyObject: "/source-bucket/source key" URL-encoded the way the path is ('/' kept).
  r.headers.emplace_back("x-amz-copy-source", "/" + UriEncode(req.source_bucket, false) + "/" +
                                                  UriEncode(req.source_key, /*keep_slash=*/true));
  if (req.source_range.has_value()) {
    // Inclusive on both ends, as HTTP ranges are.
    const uint64_t last = req.source_range->offset + req.source_range->length - 1;
    r.headers.emplace_back(
        "x-amz-copy-source-range",
        "bytes=" + std::to_string(req.source_range->offset) + "-" + std::to_string(last));
  }
  if (!req.source_if_match.empty()) {
    r.headers.emplace_back("x-amz-copy-source-if-match",
                           "\"" + std::string(StripEtag(req.source_if_match)) + "\"");
  }
  // S3 may answer 200 and then fail while copying: the body is then an <Error> document, retried
  // by its code like any other error answer.
  r.validate = internal::RejectErrorDocument;
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseCopyPartResult(resp->body);
    if (!parsed.ok())
      return done(internal::ProtocolViolation("UploadPartCopy", "unparsable body", resp->status,
                                              parsed.status()));
    done(std::move(parsed->etag));
  });
}

}  // namespace reelfs::s3

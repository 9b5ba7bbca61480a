// CopyObject.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/request_codecs.h"
#include "s3/protocol/uri.h"

namespace reelfs::s3 {

void S3Client::CopyObject(const CopyObjectRequest& req, Callback<std::string> done) {
  HttpRequest r = internal::MakeRequest("PUT", req.bucket, req.key,
                                        internal::What("CopyObject", req.bucket, req.key));
  // "/source-bucket/source key" URL-encoded the way the path is ('/' kept).
  r.headers.emplace_back("x-amz-copy-source", "/" + UriEncode(req.source_bucket, false) + "/" +
                                                  UriEncode(req.source_key, /*keep_slash=*/true));
  if (req.replace_metadata) {
    r.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
    internal::AddUserMetadata(r, *req.replace_metadata);
  } else {
    r.headers.emplace_back("x-amz-metadata-directive", "COPY");
  }
  r.validate = internal::RejectErrorDocument;  // a 200 may carry <Error>: retry it by its code
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseCopyObjectResult(resp->body);
    if (!parsed.ok())
      return done(internal::ProtocolViolation("CopyObject", "unparsable body", resp->status,
                                              parsed.status()));
    done(std::move(parsed->etag));
  });
}

}  // namespace reelfs::s3

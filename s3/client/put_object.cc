// PutObject.
#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"

namespace reelfs::s3 {

void S3Client::PutObject(const PutObjectRequest& req, Callback<std::string> done) {
  HttpRequest r = internal::MakeRequest("PUT", req.bucket, req.key,
                                        internal::What("PutObject", req.bucket, req.key));
  r.body = req.body;
  if (!req.content_type.empty()) r.headers.emplace_back("content-type", req.content_type);
  if (!req.storage_class.empty()) r.headers.emplace_back("x-amz-storage-class", req.storage_class);
  internal::AddUserMetadata(r, req.user_metadata);
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    const std::string* etag = resp->Header("etag");
    done(etag ? StripEtag(*etag) : std::string());
  });
}

}  // namespace reelfs::s3

// HeadObject.
#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"

namespace reelfs::s3 {

void S3Client::HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) {
  PickTransport().Submit(internal::MakeRequest("HEAD", req.bucket, req.key,
                                               internal::What("HeadObject", req.bucket, req.key)),
                         [done = std::move(done), key = req.key](Result<HttpResponse> r) {
                           if (!r.ok()) return done(r.status());
                           done(ObjectInfoFromHeaders(r->headers, key));
                         });
}

}  // namespace reelfs::s3

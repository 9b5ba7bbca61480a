// DeleteObject, DeleteObjects.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::s3 {

void S3Client::DeleteObject(const DeleteObjectRequest& req, StatusCallback done) {
  PickTransport().Submit(internal::MakeRequest("DELETE", req.bucket, req.key,
                                               internal::What("DeleteObject", req.bucket, req.key)),
                         internal::StatusOnly(std::move(done)));
}

void S3Client::DeleteObjects(const DeleteObjectsRequest& req, Callback<DeleteObjectsResult> done) {
  if (req.keys.empty() || req.keys.size() > 1000) {
    done(Status::InvalidArgument("DeleteObjects: between 1 and 1000 keys per request"));
    return;
  }
  HttpRequest r =
      internal::MakeRequest("POST", req.bucket, "", internal::What("DeleteObjects", req.bucket));
  r.query.emplace_back("delete", "");
  r.owned_body = EncodeDeleteObjects(DeleteObjectsInput{req.keys, req.quiet});
  r.headers.emplace_back("content-type", "application/xml");
  r.content_md5 = true;  // S3 refuses DeleteObjects without Content-MD5
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseDeleteResult(resp->body);
    if (!parsed.ok())
      return done(internal::ProtocolViolation("DeleteObjects", "unparsable body", resp->status,
                                              parsed.status()));
    done(std::move(parsed).value());
  });
}

}  // namespace reelfs::s3

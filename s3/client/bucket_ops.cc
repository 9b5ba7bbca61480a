// ListBuckets, CreateBucket, DeleteBucket.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/list_codec.h"

namespace reelfs::s3 {

using internal::MakeRequest;

void S3Client::ListBuckets(Callback<std::vector<BucketInfo>> done) {
  PickTransport().Submit(MakeRequest("GET", "", "", "ListBuckets"),
                         [done = std::move(done)](Result<HttpResponse> r) {
                           if (!r.ok()) return done(r.status());
                           auto parsed = ParseListBuckets(r->body);
                           if (!parsed.ok())
                             return done(internal::ProtocolViolation(
                                 "ListBuckets", "unparsable body", r->status, parsed.status()));
                           done(std::move(parsed).value());
                         });
}

void S3Client::CreateBucket(const std::string& bucket, StatusCallback done) {
  HttpRequest r = MakeRequest("PUT", bucket, "", internal::What("CreateBucket", bucket));
  if (options_.region != "us-east-1") {
    // Outside us-east-1, AWS wants the region restated in the body.
    r.owned_body =
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>" +
        options_.region + "</LocationConstraint></CreateBucketConfiguration>";
    r.headers.emplace_back("content-type", "application/xml");
  }
  PickTransport().Submit(std::move(r), internal::StatusOnly(std::move(done)));
}

void S3Client::DeleteBucket(const std::string& bucket, StatusCallback done) {
  PickTransport().Submit(MakeRequest("DELETE", bucket, "", internal::What("DeleteBucket", bucket)),
                         internal::StatusOnly(std::move(done)));
}

}  // namespace reelfs::s3

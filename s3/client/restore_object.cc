// RestoreObject: 202 queued; 200 ambiguous (AWS: already restored, only the expiry moved;
// versitygw: queued), so it is reported as kOk and the caller HEADs to learn the state;
// 409 with RestoreAlreadyInProgress. Any other 409 (OperationAborted, ...) is an error.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::s3 {

void S3Client::RestoreObject(const RestoreObjectRequest& req, Callback<RestoreOutcome> done) {
  HttpRequest r = internal::MakeRequest("POST", req.bucket, req.key,
                                        internal::What("RestoreObject", req.bucket, req.key));
  r.query.emplace_back("restore", "");
  // Always a body: versitygw rejects a RestoreObject without one.
  r.owned_body = EncodeRestoreRequest(RestoreRequestBody{req.days, req.tier});
  r.headers.emplace_back("content-type", "application/xml");
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) {
      const Status& st = resp.status();
      if (st.reason() == StatusReason::kRestoreInProgress) {
        return done(RestoreOutcome::kAlreadyInProgress);
      }
      return done(st);
    }
    done(resp->status == 202 ? RestoreOutcome::kAccepted : RestoreOutcome::kOk);
  });
}

}  // namespace reelfs::s3

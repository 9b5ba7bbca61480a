// GetObject: the body goes straight from libcurl's write callback into the caller's buffer (or
// sink); retries resume after the bytes already delivered (transport.cc).
#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"

namespace reelfs::s3 {

void S3Client::GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  if (req.range && req.range->length == 0) {
    done(Status::InvalidArgument("GetObject: empty range"));
    return;
  }
  HttpRequest r = internal::MakeRequest("GET", req.bucket, req.key,
                                        internal::What("GetObject", req.bucket, req.key));
  r.stream_body = true;
  r.buffer = req.buffer;
  r.sink = req.sink;
  r.range = req.range;
  r.cancel = req.cancel;
  if (!req.if_match.empty()) {
    r.headers.emplace_back("if-match", "\"" + StripEtag(req.if_match) + "\"");
  }
  PickTransport().Submit(std::move(r),
                         [done = std::move(done), key = req.key](Result<HttpResponse> resp) {
                           if (!resp.ok()) return done(resp.status());
                           GetObjectResult out;
                           out.bytes = resp->streamed_bytes;
                           out.info = ObjectInfoFromHeaders(resp->headers, key);
                           // The transport knows the object's size from Content-Range's total, a
                           // 200's length, or the end of a chunked 200. A 206 with "bytes a-b/*"
                           // leaves it unknown (0): the part's Content-Length is not the object's
                           // size, and a guess would mislead the caller.
                           out.object_size = resp->object_size;
                           out.info.size = out.object_size;
                           done(std::move(out));
                         });
}

}  // namespace reelfs::s3

// ListMultipartUploads and ListParts.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/upload_list_codec.h"

namespace reelfs::s3 {

void S3Client::ListMultipartUploads(const ListMultipartUploadsRequest& req,
                                    Callback<ListMultipartUploadsPage> done) {
  HttpRequest r = internal::MakeRequest("GET", req.bucket, "",
                                        internal::What("ListMultipartUploads", req.bucket));
  r.query.emplace_back("uploads", "");
  // Keys come back percent-encoded, so a key XML cannot carry (a control character) survives.
  r.query.emplace_back("encoding-type", "url");
  if (!req.prefix.empty()) r.query.emplace_back("prefix", req.prefix);
  if (!req.delimiter.empty()) r.query.emplace_back("delimiter", req.delimiter);
  if (!req.key_marker.empty()) {
    r.query.emplace_back("key-marker", req.key_marker);
    if (!req.upload_id_marker.empty()) {
      r.query.emplace_back("upload-id-marker", req.upload_id_marker);
    }
  }
  if (req.max_uploads > 0) r.query.emplace_back("max-uploads", std::to_string(req.max_uploads));
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseListMultipartUploadsResult(resp->body);
    if (!parsed.ok()) {
      return done(internal::ProtocolViolation("ListMultipartUploads", "unparsable body",
                                              resp->status, parsed.status()));
    }
    done(std::move(parsed->page));
  });
}

void S3Client::ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) {
  HttpRequest r = internal::MakeRequest("GET", req.bucket, req.key,
                                        internal::What("ListParts", req.bucket, req.key));
  r.query.emplace_back("uploadId", req.upload_id);
  if (req.part_number_marker > 0) {
    r.query.emplace_back("part-number-marker", std::to_string(req.part_number_marker));
  }
  if (req.max_parts > 0) r.query.emplace_back("max-parts", std::to_string(req.max_parts));
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto parsed = ParseListPartsResult(resp->body);
    if (!parsed.ok()) {
      return done(internal::ProtocolViolation("ListParts", "unparsable body", resp->status,
                                              parsed.status()));
    }
    done(std::move(parsed->page));
  });
}

}  // namespace reelfs::s3

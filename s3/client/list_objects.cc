// ListObjectsV2.
#include "s3/client/operation_internal.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/list_codec.h"

namespace reelfs::s3 {

void S3Client::ListObjects(const ListObjectsRequest& req, Callback<ListObjectsPage> done) {
  HttpRequest r =
      internal::MakeRequest("GET", req.bucket, "", internal::What("ListObjectsV2", req.bucket));
  r.query.emplace_back("list-type", "2");
  if (!req.prefix.empty()) r.query.emplace_back("prefix", req.prefix);
  if (!req.delimiter.empty()) r.query.emplace_back("delimiter", req.delimiter);
  if (!req.continuation_token.empty()) {
    r.query.emplace_back("continuation-token", req.continuation_token);
  }
  if (!req.start_after.empty()) r.query.emplace_back("start-after", req.start_after);
  if (req.max_keys > 0) r.query.emplace_back("max-keys", std::to_string(req.max_keys));
  if (req.fetch_restore_status) {
    r.headers.emplace_back("x-amz-optional-object-attributes", "RestoreStatus");
  }
  // reelfs-gateway's tape hints (docs/protocols/tape-hints.md); other servers ignore it.
  if (req.fetch_tape_hints) r.headers.emplace_back("x-reelfs-tape-hints", "1");
  PickTransport().Submit(std::move(r), [done = std::move(done)](Result<HttpResponse> resp) {
    if (!resp.ok()) return done(resp.status());
    auto page = ParseListObjectsV2(resp->body);
    if (!page.ok())
      return done(internal::ProtocolViolation("ListObjectsV2", "unparsable body", resp->status,
                                              page.status()));
    done(std::move(page).value());
  });
}

}  // namespace reelfs::s3

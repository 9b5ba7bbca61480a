// Multipart upload operations: Create, UploadPart, Complete, Abort.
#include <charconv>

#include "gateway/s3api/internal.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::gateway::s3api {

Started CreateMultipartUpload(Context ctx, const S3Request& req) {
  auto options = PutOptionsFromHeaders(req);
  if (!options.ok()) return ErrorResponse(req, options.status());
  auto id = ctx.store.CreateUpload(req.bucket, req.key, *options);
  if (!id.ok()) return ErrorResponse(req, id.status());
  s3::InitiateMultipartUploadResult result{req.bucket, req.key, *id};
  http::Response r = XmlResponse(200, s3::EncodeInitiateMultipartUploadResult(result));
  r.log_context = "op=CreateMultipartUpload";
  return r;
}

RdmaPutPlan PlanUploadPart(Context ctx, const S3Request& req) {
  std::string pn = req.Query("partNumber");
  int part_number = 0;
  auto [p, ec] = std::from_chars(pn.data(), pn.data() + pn.size(), part_number);
  if (ec != std::errc() || p != pn.data() + pn.size() || part_number < 1 || part_number > 10000) {
    return ErrorResponse(req, "InvalidArgument",
                         "Part number must be an integer between 1 and 10000, inclusive", 400);
  }
  auto upload = ctx.store.GetUpload(req.bucket, req.key, req.Query("uploadId"));
  if (!upload.ok()) return ErrorResponse(req, upload.status());
  // A body of declared size goes in place in the upload's data file when it can, so that the
  // usual upload completes with a rename (store.h CreatePartTarget); the same over RDMA.
  RdmaPutCommit::Target target = [store = &ctx.store, upload_id = upload->id,
                                  part_number](std::optional<uint64_t> size) {
    return store->CreatePartTarget(upload_id, part_number, size);
  };
  RdmaPutCommit::Publish publish = [ctx, r = req, u = std::move(*upload), part_number](
                                       TmpFile& tmp, const std::string& md5_hex, uint64_t size) {
    // Asked again: a body that came over RDMA (or a long HTTP one) arrives well after the check
    // above, and the upload may have been completed or aborted meanwhile (NoSuchUpload).
    if (auto still = ctx.store.GetUpload(r.bucket, r.key, u.id); !still.ok()) {
      return ErrorResponse(r, still.status());
    }
    Status st = ctx.store.PutPart(u, part_number, tmp, md5_hex);
    if (!st.ok()) return ErrorResponse(r, st);
    http::Response resp = EmptyResponse(200);
    resp.headers.emplace_back("ETag", QuoteEtag(md5_hex));
    resp.log_context =
        "op=UploadPart part=" + std::to_string(part_number) + " size=" + std::to_string(size);
    return resp;
  };
  return RdmaPutCommit(std::move(publish), std::move(target));
}

Started UploadPart(Context ctx, S3Request req) {
  RdmaPutPlan plan = PlanUploadPart(ctx, req);
  if (auto* refused = std::get_if<http::Response>(&plan)) return std::move(*refused);
  RdmaPutCommit commit = std::get<RdmaPutCommit>(std::move(plan));
  return StartUpload(ctx, std::move(req), commit.target,
                     [publish = std::move(commit.publish)](const S3Request&, TmpFile& tmp,
                                                           const UploadResult& result) {
                       return publish(tmp, result.md5_hex, result.size);
                     });
}

Started CompleteMultipartUpload(Context ctx, S3Request req) {
  auto upload = ctx.store.GetUpload(req.bucket, req.key, req.Query("uploadId"));
  if (!upload.ok()) return ErrorResponse(req, upload.status());
  return StartBuffered(
      ctx, std::move(req), [ctx, u = std::move(*upload)](const S3Request& r, std::string body) {
        auto parts = s3::ParseCompleteMultipartUpload(body);
        if (!parts.ok()) {
          return ErrorResponse(r, "MalformedXML",
                               "The XML you provided was not well-formed or "
                               "did not validate against our published schema",
                               400);
        }
        auto rec = ctx.store.CompleteUpload(u, *parts);
        if (!rec.ok()) return ErrorResponse(r, rec.status());
        s3::CompleteMultipartUploadResult result;
        result.location = "/" + r.bucket + "/" + r.key;
        result.bucket = r.bucket;
        result.key = r.key;
        result.etag = rec->etag;
        http::Response resp = XmlResponse(200, s3::EncodeCompleteMultipartUploadResult(result));
        resp.log_context = "op=CompleteMultipartUpload parts=" + std::to_string(parts->size());
        return resp;
      });
}

Started AbortMultipartUpload(Context ctx, const S3Request& req) {
  auto upload = ctx.store.GetUpload(req.bucket, req.key, req.Query("uploadId"));
  if (!upload.ok()) return ErrorResponse(req, upload.status());
  Status st = ctx.store.AbortUpload(*upload);
  if (!st.ok()) return ErrorResponse(req, st);
  http::Response r = EmptyResponse(204);
  r.log_context = "op=AbortMultipartUpload";
  return r;
}

}  // namespace reelfs::gateway::s3api

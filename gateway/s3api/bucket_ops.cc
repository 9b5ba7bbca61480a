// Service- and bucket-level operations: ListBuckets, Create/Delete/HeadBucket, ListObjectsV2,
// DeleteObjects.
#include <algorithm>
#include <charconv>
#include <optional>

#include "gateway/s3api/internal.h"
#include "gateway/store/key_validation.h"
#include "s3/protocol/list_codec.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::gateway::s3api {

Started ListBuckets(Context ctx, const S3Request& req) {
  auto buckets = ctx.store.ListBuckets();
  if (!buckets.ok()) return ErrorResponse(req, buckets.status());
  http::Response r = XmlResponse(200, s3::EncodeListBuckets(*buckets, ctx.options.access_key));
  r.log_context = "op=ListBuckets";
  return r;
}

Started CreateBucket(Context ctx, S3Request req) {
  return StartBuffered(ctx, std::move(req), [ctx](const S3Request& r, std::string body) {
    if (!body.empty()) {
      auto location = s3::ParseCreateBucketConfiguration(body);
      if (!location.ok()) {
        return ErrorResponse(r, "MalformedXML", "The XML you provided was not well-formed", 400);
      }
    }
    Status st = ctx.store.CreateBucket(r.bucket);
    if (!st.ok()) return ErrorResponse(r, st);
    http::Response resp = EmptyResponse(200);
    resp.headers.emplace_back("Location", "/" + r.bucket);
    resp.log_context = "op=CreateBucket";
    return resp;
  });
}

Started DeleteBucket(Context ctx, const S3Request& req) {
  Status st = ctx.store.DeleteBucket(req.bucket);
  if (!st.ok()) return ErrorResponse(req, st);
  http::Response r = EmptyResponse(204);
  r.log_context = "op=DeleteBucket";
  return r;
}

Started HeadBucket(Context ctx, const S3Request& req) {
  Status st = ctx.store.HeadBucket(req.bucket);
  if (!st.ok()) return ErrorResponse(req, st);
  http::Response r = EmptyResponse(200);
  r.headers.emplace_back("x-amz-bucket-region", ctx.options.region);
  r.log_context = "op=HeadBucket";
  return r;
}

namespace {

// The request parameters both list versions share; an error response when one is malformed.
std::optional<http::Response> ParseListParams(const S3Request& req, ListParams* params,
                                              bool* url_encode) {
  params->prefix = req.Query("prefix");
  params->delimiter = req.Query("delimiter");
  if (req.Has("max-keys")) {
    std::string mk = req.Query("max-keys");
    int n = 0;
    auto [p, ec] = std::from_chars(mk.data(), mk.data() + mk.size(), n);
    if (ec != std::errc() || p != mk.data() + mk.size() || n < 0) {
      return ErrorResponse(req, "InvalidArgument",
                           "Provided max-keys not an integer or within integer range", 400);
    }
    params->max_keys = std::min(n, 1000);
  }
  std::string encoding = req.Query("encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return ErrorResponse(req, "InvalidArgument", "Invalid Encoding Method specified in Request",
                         400);
  }
  *url_encode = encoding == "url";
  return std::nullopt;
}

}  // namespace

Started ListObjectsV2(Context ctx, const S3Request& req) {
  ListParams params;
  s3::ListObjectsV2Result result;
  if (auto bad = ParseListParams(req, &params, &result.url_encode)) return std::move(*bad);
  params.start_after = req.Query("start-after");
  params.continuation_token = req.Query("continuation-token");
  std::vector<ObjectRecord> rows;
  auto page = ctx.store.List(req.bucket, params, &rows);
  if (!page.ok()) return ErrorResponse(req, page.status());
  result.include_restore_status = DecorateListing(ctx, req, rows, *page);
  result.bucket = req.bucket;
  result.prefix = params.prefix;
  result.delimiter = params.delimiter;
  result.start_after = params.start_after;
  result.continuation_token = params.continuation_token;
  result.max_keys = params.max_keys;
  result.page = std::move(*page);
  http::Response r = XmlResponse(200, s3::EncodeListObjectsV2(result));
  AddListingHints(ctx, req, rows, r);
  r.log_context = "op=ListObjectsV2";
  return r;
}

Started ListObjectsV1(Context ctx, const S3Request& req) {
  ListParams params;
  s3::ListObjectsV1Result result;
  if (auto bad = ParseListParams(req, &params, &result.url_encode)) return std::move(*bad);
  params.start_after = req.Query("marker");  // same semantics: strictly after
  std::vector<ObjectRecord> rows;
  auto page = ctx.store.List(req.bucket, params, &rows);
  if (!page.ok()) return ErrorResponse(req, page.status());
  DecorateListing(ctx, req, rows, *page);  // v1 has no RestoreStatus in our codec
  result.bucket = req.bucket;
  result.prefix = params.prefix;
  result.delimiter = params.delimiter;
  result.marker = params.start_after;
  result.max_keys = params.max_keys;
  result.page = std::move(*page);
  result.page.next_continuation_token.clear();
  if (result.page.is_truncated && !params.delimiter.empty()) {
    // As AWS: NextMarker only with a delimiter; it is the last entry returned, key or prefix
    // (the store emits both in key order, so the greater of the two last ones).
    const auto& objects = result.page.objects;
    const auto& prefixes = result.page.common_prefixes;
    if (!objects.empty()) result.next_marker = objects.back().key;
    if (!prefixes.empty() && prefixes.back() > result.next_marker) {
      result.next_marker = prefixes.back();
    }
  }
  http::Response r = XmlResponse(200, s3::EncodeListObjectsV1(result));
  AddListingHints(ctx, req, rows, r);
  r.log_context = "op=ListObjects";
  return r;
}

Started DeleteObjects(Context ctx, S3Request req) {
  return StartBuffered(ctx, std::move(req), [ctx](const S3Request& r, std::string body) {
    auto input = s3::ParseDeleteObjects(body);
    if (!input.ok() || input->keys.size() > 1000) {
      return ErrorResponse(r, "MalformedXML",
                           "The XML you provided was not well-formed or did "
                           "not validate against our published schema",
                           400);
    }
    if (Status st = ctx.store.HeadBucket(r.bucket); !st.ok()) return ErrorResponse(r, st);
    s3::DeleteObjectsResult result;
    for (const std::string& key : input->keys) {
      Status st = ValidateObjectKey(key);
      if (st.ok()) st = ctx.store.Delete(r.bucket, key);
      if (st.ok()) {
        if (!input->quiet) result.deleted.push_back(key);
      } else {
        std::string code = st.detail().s3_code.empty() ? "InternalError" : st.detail().s3_code;
        result.errors.push_back(s3::DeleteError{key, code, std::string(st.message())});
      }
    }
    http::Response resp = XmlResponse(200, s3::EncodeDeleteResult(result));
    resp.log_context = "op=DeleteObjects n=" + std::to_string(input->keys.size());
    return resp;
  });
}

}  // namespace reelfs::gateway::s3api

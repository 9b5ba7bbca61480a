// Listings of multipart uploads: ListMultipartUploads (GET /bucket?uploads) and ListParts
// (GET /bucket/key?uploadId=ID), answered as AWS does (docs/gateway.md "Multipart uploads").
#include <algorithm>
#include <charconv>
#include <optional>

#include "gateway/s3api/internal.h"
#include "s3/protocol/upload_list_codec.h"

namespace reelfs::gateway::s3api {
namespace {

// A non-negative integer query parameter, capped at `cap` (AWS caps max-uploads and max-parts
// at 1000); nullopt when malformed (AWS: 400 InvalidArgument).
std::optional<int> IntParam(const S3Request& req, std::string_view name, int absent, int cap) {
  if (!req.Has(name)) return absent;
  std::string text = req.Query(name);
  int64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p != text.data() + text.size() || n < 0 || n > INT32_MAX) {
    return std::nullopt;
  }
  return static_cast<int>(std::min<int64_t>(n, cap));
}

}  // namespace

Started ListMultipartUploads(Context ctx, const S3Request& req) {
  UploadListParams params;
  params.prefix = req.Query("prefix");
  params.delimiter = req.Query("delimiter");
  params.key_marker = req.Query("key-marker");
  // AWS ignores upload-id-marker without key-marker.
  if (!params.key_marker.empty()) params.upload_id_marker = req.Query("upload-id-marker");
  std::optional<int> max = IntParam(req, "max-uploads", 1000, 1000);
  if (!max.has_value()) {
    return ErrorResponse(req, "InvalidArgument",
                         "Provided max-uploads not an integer or within integer range", 400);
  }
  params.max_uploads = *max;
  std::string encoding = req.Query("encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return ErrorResponse(req, "InvalidArgument", "Invalid Encoding Method specified in Request",
                         400);
  }
  auto page = ctx.store.ListUploads(req.bucket, params);
  if (!page.ok()) return ErrorResponse(req, page.status());
  s3::ListMultipartUploadsResult result;
  result.bucket = req.bucket;
  result.prefix = params.prefix;
  result.delimiter = params.delimiter;
  result.key_marker = params.key_marker;
  result.upload_id_marker = params.upload_id_marker;
  result.max_uploads = params.max_uploads;
  result.url_encode = encoding == "url";
  result.owner_id = ctx.options.access_key;
  result.page = std::move(*page);
  http::Response r = XmlResponse(200, s3::EncodeListMultipartUploadsResult(result));
  r.log_context = "op=ListMultipartUploads uploads=" + std::to_string(result.page.uploads.size());
  return r;
}

Started ListParts(Context ctx, const S3Request& req) {
  auto upload = ctx.store.GetUpload(req.bucket, req.key, req.Query("uploadId"));
  if (!upload.ok()) return ErrorResponse(req, upload.status());
  std::optional<int> max = IntParam(req, "max-parts", 1000, 1000);
  if (!max.has_value()) {
    return ErrorResponse(req, "InvalidArgument",
                         "Provided max-parts not an integer or within integer range", 400);
  }
  std::optional<int> marker = IntParam(req, "part-number-marker", 0, 10000);
  if (!marker.has_value()) {
    return ErrorResponse(req, "InvalidArgument",
                         "Provided part-number-marker not an integer or within integer range", 400);
  }
  const int part_number_marker = *marker;
  auto page = ctx.store.ListUploadParts(*upload, part_number_marker, *max);
  if (!page.ok()) return ErrorResponse(req, page.status());
  s3::ListPartsResult result;
  result.bucket = req.bucket;
  result.key = req.key;
  result.upload_id = upload->id;
  result.owner_id = ctx.options.access_key;
  result.storage_class = upload->storage_class;
  result.part_number_marker = part_number_marker;
  result.max_parts = *max;
  result.page = std::move(*page);
  http::Response r = XmlResponse(200, s3::EncodeListPartsResult(result));
  r.log_context = "op=ListParts parts=" + std::to_string(result.page.parts.size());
  return r;
}

}  // namespace reelfs::gateway::s3api

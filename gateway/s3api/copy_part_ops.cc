// UploadPartCopy: PUT /bucket/key?partNumber=N&uploadId=ID with x-amz-copy-source, a part copied
// from an existing object (all of it, or x-amz-copy-source-range bytes=first-last), answered with
// <CopyPartResult>. Errors as AWS S3 answers them (AWS S3 API reference, UploadPartCopy):
// an unknown upload NoSuchUpload, a missing source NoSuchKey, an archived source that is not
// restored 403 InvalidObjectState (as CopyObject and GET), a malformed or out-of-bounds range
// 400 InvalidArgument, x-amz-copy-source-if-match that does not hold 412 PreconditionFailed, a
// part over 5 GiB 400 InvalidRequest.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/s3_error_table.h"
#include "common/strings.h"
#include "gateway/s3api/internal.h"
#include "gateway/store/etag.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::gateway::s3api {
namespace {

// S3's largest part, and so the largest range one UploadPartCopy may copy.
constexpr uint64_t kMaxCopyPartSize = 5ull << 30;

struct SourceRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
};

// "bytes=first-last", both present, first <= last; nothing else (no suffix or open ranges, no
// lists), as AWS accepts it.
std::optional<SourceRange> ParseSourceRange(std::string_view text) {
  text = Trim(text);
  if (!text.starts_with("bytes=")) return std::nullopt;
  text.remove_prefix(6);
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == text.size()) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<uint64_t> {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  };
  std::optional<uint64_t> first = number(text.substr(0, dash));
  std::optional<uint64_t> last = number(text.substr(dash + 1));
  if (!first || !last || *first > *last) return std::nullopt;
  return SourceRange{*first, *last};
}

bool EtagListMatches(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const size_t comma = header.find(',');
    std::string_view item = Trim(header.substr(0, comma));
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item == "*" || Unquote(item) == etag) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

Started UploadPartCopy(Context ctx, const S3Request& req) {
  std::string pn = req.Query("partNumber");
  int part_number = 0;
  auto [p, ec] = std::from_chars(pn.data(), pn.data() + pn.size(), part_number);
  if (ec != std::errc() || p != pn.data() + pn.size() || part_number < 1 || part_number > 10000) {
    return ErrorResponse(req, "InvalidArgument",
                         "Part number must be an integer between 1 and 10000, inclusive", 400);
  }
  auto upload = ctx.store.GetUpload(req.bucket, req.key, req.Query("uploadId"));
  if (!upload.ok()) return ErrorResponse(req, upload.status());
  auto parsed_source = ParseCopySource(req);
  if (auto* refused = std::get_if<http::Response>(&parsed_source)) return std::move(*refused);
  const CopySource& source = std::get<CopySource>(parsed_source);

  auto opened = ctx.store.Open(source.bucket, source.key);
  if (!opened.ok()) return ErrorResponse(req, opened.status());
  const ObjectRecord& srec = opened->record;
  if (srec.archive && srec.archive->state == ArchiveState::kOffline) {
    return InvalidObjectState(ctx, req);  // as CopyObject: the bytes are on tape only
  }
  if (const std::string* if_match = req.Header("x-amz-copy-source-if-match");
      if_match != nullptr && !EtagListMatches(*if_match, srec.etag)) {
    return ErrorResponse(req, kS3PreconditionFailed,
                         "At least one of the pre-conditions you specified did not hold", 412);
  }
  uint64_t offset = 0;
  uint64_t length = srec.size;
  if (const std::string* range_text = req.Header("x-amz-copy-source-range")) {
    std::optional<SourceRange> range = ParseSourceRange(*range_text);
    if (!range.has_value()) {
      return ErrorResponse(req, "InvalidArgument",
                           "The x-amz-copy-source-range value must be of the form bytes=first-last "
                           "where first and last are the zero-based offsets of the first and last "
                           "bytes to copy",
                           400);
    }
    if (range->last >= srec.size) {
      return ErrorResponse(
          req, "InvalidArgument",
          "Range specified is not valid for source object of size: " + std::to_string(srec.size),
          400);
    }
    offset = range->first;
    length = range->last - range->first + 1;
  }
  if (length > kMaxCopyPartSize) {
    return ErrorResponse(req, "InvalidRequest",
                         "The specified copy source is larger than the maximum allowable size for "
                         "a copy source: " +
                             std::to_string(kMaxCopyPartSize),
                         400);
  }

  auto tmp = ctx.store.fs().CreateTmp("part");
  if (!tmp.ok()) return ErrorResponse(req, tmp.status());
  if (Status st = tmp->CopyFrom(opened->fd.get(), offset, length); !st.ok()) {
    return ErrorResponse(req, st);
  }
  auto md5 = Md5HexOfFd(tmp->fd());
  if (!md5.ok()) return ErrorResponse(req, md5.status());
  // Asked again, as UploadPart does: the upload may have been completed or aborted meanwhile.
  if (auto still = ctx.store.GetUpload(req.bucket, req.key, upload->id); !still.ok()) {
    return ErrorResponse(req, still.status());
  }
  if (Status st = ctx.store.PutPart(*upload, part_number, *tmp, *md5); !st.ok()) {
    return ErrorResponse(req, st);
  }
  s3::CopyPartResult result;
  result.etag = *md5;
  result.last_modified = std::chrono::system_clock::now();
  http::Response r = XmlResponse(200, s3::EncodeCopyPartResult(result));
  r.log_context = "op=UploadPartCopy part=" + std::to_string(part_number) +
                  " src=" + LogSafe(source.bucket) + "/" + LogSafe(source.key) +
                  " size=" + std::to_string(length);
  return r;
}

}  // namespace reelfs::gateway::s3api

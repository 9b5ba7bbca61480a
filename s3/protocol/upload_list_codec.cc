#include "s3/protocol/upload_list_codec.h"

#include <utility>

#include "common/strings.h"
#include "s3/protocol/time_format.h"
#include "s3/protocol/uri.h"
#include "s3/protocol/xml_internal.h"

namespace reelfs::s3 {
namespace {

using xml_internal::AppendText;
using xml_internal::Child;
using xml_internal::ChildText;
using xml_internal::DecodeCommonPrefixes;
using xml_internal::DecodeListValue;
using xml_internal::ForEachChild;
using xml_internal::ParseTimeElement;
using xml_internal::Text;

constexpr int64_t kMaxPartNumber = 10000;
constexpr int64_t kMaxListLimit = 1000000;  // MaxUploads / MaxParts echoed: AWS caps at 1000

std::string EncodeValue(std::string_view value, bool url_encode) {
  return url_encode ? UriEncode(value, /*keep_slash=*/true) : std::string(value);
}

void AppendOwner(pugi::xml_node parent, const char* name, const std::string& owner_id) {
  pugi::xml_node node = parent.append_child(name);
  AppendText(node, "ID", owner_id);
  AppendText(node, "DisplayName", owner_id);
}

Result<std::string> DecodedChild(const pugi::xml_node& root, std::string_view name, bool url) {
  return DecodeListValue(ChildText(root, name), url, name);
}

Result<bool> OptionalBool(const pugi::xml_node& root, std::string_view name) {
  pugi::xml_node node = Child(root, name);
  if (!node) return false;
  return xml_internal::ParseBool(Text(node), name);
}

Result<int> OptionalInt(const pugi::xml_node& root, std::string_view name, int64_t min, int64_t max,
                        int absent) {
  pugi::xml_node node = Child(root, name);
  if (!node || Trim(Text(node), kWhitespace).empty()) return absent;
  REELFS_ASSIGN_OR_RETURN(int64_t value, xml_internal::ParseIntInRange(Text(node), name, min, max));
  return static_cast<int>(value);
}

Result<MultipartUploadInfo> ParseUpload(const pugi::xml_node& node, bool url) {
  pugi::xml_node key = Child(node, "Key");
  pugi::xml_node id = Child(node, "UploadId");
  if (!key || !id || Trim(Text(id), kWhitespace).empty()) {
    return Status::InvalidArgument("malformed XML: <Upload> needs <Key> and <UploadId>");
  }
  MultipartUploadInfo info;
  REELFS_ASSIGN_OR_RETURN(info.key, DecodeListValue(Text(key), url, "Key"));
  info.upload_id = std::string(Trim(Text(id), kWhitespace));
  if (pugi::xml_node initiated = Child(node, "Initiated")) {
    REELFS_ASSIGN_OR_RETURN(info.initiated, ParseTimeElement(initiated, "Initiated"));
  }
  std::string storage_class(Trim(ChildText(node, "StorageClass"), kWhitespace));
  if (!storage_class.empty()) info.storage_class = std::move(storage_class);
  return info;
}

Result<PartInfo> ParsePart(const pugi::xml_node& node) {
  pugi::xml_node number = Child(node, "PartNumber");
  if (!number) return Status::InvalidArgument("malformed XML: <Part> without <PartNumber>");
  PartInfo part;
  REELFS_ASSIGN_OR_RETURN(
      int64_t n, xml_internal::ParseIntInRange(Text(number), "PartNumber", 1, kMaxPartNumber));
  part.part_number = static_cast<int>(n);
  part.etag = xml_internal::StripEtagQuotes(ChildText(node, "ETag"));
  if (pugi::xml_node size = Child(node, "Size")) {
    REELFS_ASSIGN_OR_RETURN(part.size, xml_internal::ParseUint64(Text(size), "Size"));
  }
  if (pugi::xml_node modified = Child(node, "LastModified")) {
    REELFS_ASSIGN_OR_RETURN(part.last_modified, ParseTimeElement(modified, "LastModified"));
  }
  return part;
}

}  // namespace

std::string EncodeListMultipartUploadsResult(const ListMultipartUploadsResult& result) {
  const bool url = result.url_encode;
  const ListMultipartUploadsPage& page = result.page;
  pugi::xml_document doc;
  pugi::xml_node root =
      xml_internal::NewDocument(doc, "ListMultipartUploadsResult", /*with_ns=*/true);
  AppendText(root, "Bucket", result.bucket);
  AppendText(root, "KeyMarker", EncodeValue(result.key_marker, url));
  AppendText(root, "UploadIdMarker", result.upload_id_marker);
  AppendText(root, "NextKeyMarker", EncodeValue(page.next_key_marker, url));
  AppendText(root, "NextUploadIdMarker", page.next_upload_id_marker);
  if (!result.delimiter.empty()) AppendText(root, "Delimiter", EncodeValue(result.delimiter, url));
  AppendText(root, "Prefix", EncodeValue(result.prefix, url));
  AppendText(root, "MaxUploads", std::to_string(result.max_uploads));
  AppendText(root, "IsTruncated", page.is_truncated ? "true" : "false");
  if (url) AppendText(root, "EncodingType", "url");
  for (const MultipartUploadInfo& upload : page.uploads) {
    pugi::xml_node node = root.append_child("Upload");
    AppendText(node, "Key", EncodeValue(upload.key, url));
    AppendText(node, "UploadId", upload.upload_id);
    AppendOwner(node, "Initiator", result.owner_id);
    AppendOwner(node, "Owner", result.owner_id);
    AppendText(node, "StorageClass",
               upload.storage_class.empty() ? "STANDARD" : upload.storage_class);
    AppendText(node, "Initiated", FormatIso8601(upload.initiated));
  }
  for (const std::string& prefix : page.common_prefixes) {
    AppendText(root.append_child("CommonPrefixes"), "Prefix", EncodeValue(prefix, url));
  }
  return xml_internal::Serialize(doc);
}

Result<ListMultipartUploadsResult> ParseListMultipartUploadsResult(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "ListMultipartUploadsResult", doc));
  const bool url = Trim(ChildText(root, "EncodingType"), kWhitespace) == "url";
  ListMultipartUploadsResult r;
  r.url_encode = url;
  r.bucket = ChildText(root, "Bucket");
  REELFS_ASSIGN_OR_RETURN(r.prefix, DecodedChild(root, "Prefix", url));
  REELFS_ASSIGN_OR_RETURN(r.delimiter, DecodedChild(root, "Delimiter", url));
  REELFS_ASSIGN_OR_RETURN(r.key_marker, DecodedChild(root, "KeyMarker", url));
  r.upload_id_marker = std::string(Trim(ChildText(root, "UploadIdMarker"), kWhitespace));
  REELFS_ASSIGN_OR_RETURN(r.max_uploads, OptionalInt(root, "MaxUploads", 0, kMaxListLimit, 1000));
  ListMultipartUploadsPage& page = r.page;
  REELFS_ASSIGN_OR_RETURN(page.is_truncated, OptionalBool(root, "IsTruncated"));
  REELFS_ASSIGN_OR_RETURN(page.next_key_marker, DecodedChild(root, "NextKeyMarker", url));
  page.next_upload_id_marker =
      std::string(Trim(ChildText(root, "NextUploadIdMarker"), kWhitespace));

  Status status;
  ForEachChild(root, "Upload", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    Result<MultipartUploadInfo> upload = ParseUpload(node, url);
    if (!upload.ok()) {
      status = std::move(upload).status();
      return;
    }
    page.uploads.push_back(std::move(upload).value());
  });
  REELFS_RETURN_IF_ERROR(status);
  REELFS_RETURN_IF_ERROR(DecodeCommonPrefixes(root, url, &page.common_prefixes));
  if (page.is_truncated && page.next_key_marker.empty()) {
    return Status::InvalidArgument(
        "malformed XML: a truncated ListMultipartUploadsResult without <NextKeyMarker>");
  }
  return r;
}

std::string EncodeListPartsResult(const ListPartsResult& result) {
  const ListPartsPage& page = result.page;
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "ListPartsResult", /*with_ns=*/true);
  AppendText(root, "Bucket", result.bucket);
  AppendText(root, "Key", result.key);
  AppendText(root, "UploadId", result.upload_id);
  AppendOwner(root, "Initiator", result.owner_id);
  AppendOwner(root, "Owner", result.owner_id);
  AppendText(root, "StorageClass",
             result.storage_class.empty() ? "STANDARD" : result.storage_class);
  AppendText(root, "PartNumberMarker", std::to_string(result.part_number_marker));
  if (page.next_part_number_marker > 0) {
    AppendText(root, "NextPartNumberMarker", std::to_string(page.next_part_number_marker));
  }
  AppendText(root, "MaxParts", std::to_string(result.max_parts));
  AppendText(root, "IsTruncated", page.is_truncated ? "true" : "false");
  for (const PartInfo& part : page.parts) {
    pugi::xml_node node = root.append_child("Part");
    AppendText(node, "PartNumber", std::to_string(part.part_number));
    AppendText(node, "LastModified", FormatIso8601(part.last_modified));
    AppendText(node, "ETag", xml_internal::QuoteEtag(part.etag));
    AppendText(node, "Size", std::to_string(part.size));
  }
  return xml_internal::Serialize(doc);
}

Result<ListPartsResult> ParseListPartsResult(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "ListPartsResult", doc));
  ListPartsResult r;
  r.bucket = ChildText(root, "Bucket");
  r.key = ChildText(root, "Key");  // ListParts has no EncodingType for the key in our scope
  r.upload_id = std::string(Trim(ChildText(root, "UploadId"), kWhitespace));
  std::string storage_class(Trim(ChildText(root, "StorageClass"), kWhitespace));
  if (!storage_class.empty()) r.storage_class = std::move(storage_class);
  REELFS_ASSIGN_OR_RETURN(r.part_number_marker,
                          OptionalInt(root, "PartNumberMarker", 0, kMaxPartNumber, 0));
  REELFS_ASSIGN_OR_RETURN(r.max_parts, OptionalInt(root, "MaxParts", 0, kMaxListLimit, 1000));
  ListPartsPage& page = r.page;
  REELFS_ASSIGN_OR_RETURN(page.is_truncated, OptionalBool(root, "IsTruncated"));
  REELFS_ASSIGN_OR_RETURN(page.next_part_number_marker,
                          OptionalInt(root, "NextPartNumberMarker", 0, kMaxPartNumber, 0));
  Status status;
  ForEachChild(root, "Part", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    Result<PartInfo> part = ParsePart(node);
    if (!part.ok()) {
      status = std::move(part).status();
      return;
    }
    page.parts.push_back(std::move(part).value());
  });
  REELFS_RETURN_IF_ERROR(status);
  if (page.is_truncated && page.next_part_number_marker <= r.part_number_marker) {
    return Status::InvalidArgument(
        "malformed XML: a truncated ListPartsResult whose <NextPartNumberMarker> does not move "
        "past <PartNumberMarker>");
  }
  return r;
}

}  // namespace reelfs::s3

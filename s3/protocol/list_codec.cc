#include "s3/protocol/list_codec.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
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

Result<RestoreInfo> ParseRestoreStatus(const pugi::xml_node& node) {
  RestoreInfo info;
  if (pugi::xml_node ongoing = Child(node, "IsRestoreInProgress")) {
    REELFS_ASSIGN_OR_RETURN(info.ongoing,
                            xml_internal::ParseBool(Text(ongoing), "IsRestoreInProgress"));
  }
  if (pugi::xml_node expiry = Child(node, "RestoreExpiryDate")) {
    REELFS_ASSIGN_OR_RETURN(info.expiry, ParseTimeElement(expiry, "RestoreExpiryDate"));
  }
  return info;
}

// reelfs-gateway's optional <ReelfsTape> (docs/protocols/tape-hints.md), stored under the names
// of the HEAD headers so hsm::TapeHintOf reads both alike. Hints are advice: an element that is
// missing, empty or not a number is skipped, and never fails the listing.
void ParseTapeHints(const pugi::xml_node& node, std::map<std::string, std::string>& hints) {
  auto number = [&](std::string_view name) -> std::optional<uint64_t> {
    pugi::xml_node child = Child(node, name);
    if (!child) return std::nullopt;
    const std::string raw = Text(child);
    std::string_view text = Trim(raw, kWhitespace);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  };
  std::string cartridge(Trim(ChildText(node, "Cartridge"), kWhitespace));
  if (!cartridge.empty()) hints["x-reelfs-tape-cartridge"] = std::move(cartridge);
  if (auto block = number("Block")) hints["x-reelfs-tape-block"] = std::to_string(*block);
  std::string position;
  if (auto wrap = number("Wrap")) position = "wrap=" + std::to_string(*wrap);
  if (auto lpos = number("Lpos")) {
    position += (position.empty() ? "lpos=" : ",lpos=") + std::to_string(*lpos);
  }
  if (!position.empty()) hints["x-reelfs-tape-position"] = std::move(position);
  std::string state(Trim(ChildText(node, "State"), kWhitespace));
  if (!state.empty()) hints["x-reelfs-tape-state"] = std::move(state);
}

Result<ObjectInfo> ParseContents(const pugi::xml_node& node, bool url_encoded) {
  pugi::xml_node key = Child(node, "Key");
  if (!key) return Status::InvalidArgument("malformed XML: <Contents> without <Key>");
  ObjectInfo info;
  REELFS_ASSIGN_OR_RETURN(info.key, DecodeListValue(Text(key), url_encoded, "Key"));
  if (pugi::xml_node size = Child(node, "Size")) {
    REELFS_ASSIGN_OR_RETURN(info.size, xml_internal::ParseUint64(Text(size), "Size"));
  }
  if (pugi::xml_node modified = Child(node, "LastModified")) {
    REELFS_ASSIGN_OR_RETURN(info.last_modified, ParseTimeElement(modified, "LastModified"));
  }
  info.etag = xml_internal::StripEtagQuotes(ChildText(node, "ETag"));
  std::string storage_class(Trim(ChildText(node, "StorageClass"), kWhitespace));
  if (!storage_class.empty()) info.storage_class = std::move(storage_class);
  if (pugi::xml_node restore = Child(node, "RestoreStatus")) {
    REELFS_ASSIGN_OR_RETURN(info.restore, ParseRestoreStatus(restore));
  }
  if (pugi::xml_node tape = Child(node, "ReelfsTape")) ParseTapeHints(tape, info.hints);
  return info;
}

std::string EncodeListValue(std::string_view value, bool url_encode) {
  return url_encode ? UriEncode(value, /*keep_slash=*/true) : std::string(value);
}

void AppendContents(pugi::xml_node root, const ObjectInfo& object, bool include_restore_status,
                    bool url_encode) {
  pugi::xml_node contents = root.append_child("Contents");
  AppendText(contents, "Key", EncodeListValue(object.key, url_encode));
  AppendText(contents, "LastModified", FormatIso8601(object.last_modified));
  AppendText(contents, "ETag", xml_internal::QuoteEtag(object.etag));
  AppendText(contents, "Size", std::to_string(object.size));
  AppendText(contents, "StorageClass",
             object.storage_class.empty() ? "STANDARD" : object.storage_class);
  if (include_restore_status && object.restore.has_value()) {
    pugi::xml_node restore = contents.append_child("RestoreStatus");
    AppendText(restore, "IsRestoreInProgress", object.restore->ongoing ? "true" : "false");
    if (object.restore->expiry.has_value()) {
      AppendText(restore, "RestoreExpiryDate", FormatIso8601(*object.restore->expiry));
    }
  }
}

}  // namespace

Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "ListBucketResult", doc));
  std::string encoding(Trim(ChildText(root, "EncodingType"), kWhitespace));
  const bool url_encoded = encoding == "url";

  ListObjectsPage page;
  if (pugi::xml_node truncated = Child(root, "IsTruncated")) {
    REELFS_ASSIGN_OR_RETURN(page.is_truncated,
                            xml_internal::ParseBool(Text(truncated), "IsTruncated"));
  }
  // The token is opaque and never url-encoded.
  page.next_continuation_token = ChildText(root, "NextContinuationToken");

  Status status;
  ForEachChild(root, "Contents", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    Result<ObjectInfo> info = ParseContents(node, url_encoded);
    if (!info.ok()) {
      status = std::move(info).status();
      return;
    }
    page.objects.push_back(std::move(info).value());
  });
  REELFS_RETURN_IF_ERROR(status);

  REELFS_RETURN_IF_ERROR(DecodeCommonPrefixes(root, url_encoded, &page.common_prefixes));
  return page;
}

std::string EncodeListObjectsV2(const ListObjectsV2Result& result) {
  const bool url = result.url_encode;
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "ListBucketResult", /*with_ns=*/true);
  AppendText(root, "Name", result.bucket);
  AppendText(root, "Prefix", EncodeListValue(result.prefix, url));
  if (!result.delimiter.empty()) {
    AppendText(root, "Delimiter", EncodeListValue(result.delimiter, url));
  }
  AppendText(root, "MaxKeys", std::to_string(result.max_keys));
  AppendText(root, "KeyCount",
             std::to_string(result.page.objects.size() + result.page.common_prefixes.size()));
  AppendText(root, "IsTruncated", result.page.is_truncated ? "true" : "false");
  if (url) AppendText(root, "EncodingType", "url");
  if (!result.continuation_token.empty()) {
    AppendText(root, "ContinuationToken", result.continuation_token);
  }
  if (!result.page.next_continuation_token.empty()) {
    AppendText(root, "NextContinuationToken", result.page.next_continuation_token);
  }
  if (!result.start_after.empty()) {
    AppendText(root, "StartAfter", EncodeListValue(result.start_after, url));
  }
  for (const ObjectInfo& object : result.page.objects) {
    AppendContents(root, object, result.include_restore_status, url);
  }
  for (const std::string& prefix : result.page.common_prefixes) {
    AppendText(root.append_child("CommonPrefixes"), "Prefix", EncodeListValue(prefix, url));
  }
  return xml_internal::Serialize(doc);
}

std::string EncodeListObjectsV1(const ListObjectsV1Result& result) {
  const bool url = result.url_encode;
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "ListBucketResult", /*with_ns=*/true);
  AppendText(root, "Name", result.bucket);
  AppendText(root, "Prefix", EncodeListValue(result.prefix, url));
  AppendText(root, "Marker", EncodeListValue(result.marker, url));
  if (!result.next_marker.empty()) {
    AppendText(root, "NextMarker", EncodeListValue(result.next_marker, url));
  }
  AppendText(root, "MaxKeys", std::to_string(result.max_keys));
  if (!result.delimiter.empty()) {
    AppendText(root, "Delimiter", EncodeListValue(result.delimiter, url));
  }
  AppendText(root, "IsTruncated", result.page.is_truncated ? "true" : "false");
  if (url) AppendText(root, "EncodingType", "url");
  for (const ObjectInfo& object : result.page.objects) {
    AppendContents(root, object, /*include_restore_status=*/false, url);
  }
  for (const std::string& prefix : result.page.common_prefixes) {
    AppendText(root.append_child("CommonPrefixes"), "Prefix", EncodeListValue(prefix, url));
  }
  return xml_internal::Serialize(doc);
}

Result<ListObjectsV1Page> ParseListObjectsV1(std::string_view xml) {
  // The v1 document is the v2 one with Marker/NextMarker instead of the tokens.
  ListObjectsV1Page out;
  REELFS_ASSIGN_OR_RETURN(out.page, ParseListObjectsV2(xml));
  out.page.next_continuation_token.clear();
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "ListBucketResult", doc));
  const bool url_encoded = Trim(ChildText(root, "EncodingType"), kWhitespace) == "url";
  if (pugi::xml_node next = Child(root, "NextMarker")) {
    REELFS_ASSIGN_OR_RETURN(out.next_marker,
                            DecodeListValue(Text(next), url_encoded, "NextMarker"));
  }
  return out;
}

Result<std::vector<BucketInfo>> ParseListBuckets(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "ListAllMyBucketsResult", doc));
  std::vector<BucketInfo> buckets;
  Status status;
  ForEachChild(Child(root, "Buckets"), "Bucket", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    pugi::xml_node name = Child(node, "Name");
    if (!name) {
      status = Status::InvalidArgument("malformed XML: <Bucket> without <Name>");
      return;
    }
    BucketInfo bucket;
    bucket.name = Text(name);
    if (pugi::xml_node created = Child(node, "CreationDate")) {
      Result<WallTime> t = ParseTimeElement(created, "CreationDate");
      if (!t.ok()) {
        status = std::move(t).status();
        return;
      }
      bucket.creation_date = *t;
    }
    buckets.push_back(std::move(bucket));
  });
  REELFS_RETURN_IF_ERROR(status);
  return buckets;
}

std::string EncodeListBuckets(const std::vector<BucketInfo>& buckets, std::string_view owner_id) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "ListAllMyBucketsResult", /*with_ns=*/true);
  pugi::xml_node owner = root.append_child("Owner");
  AppendText(owner, "ID", owner_id);
  AppendText(owner, "DisplayName", owner_id);
  pugi::xml_node list = root.append_child("Buckets");
  for (const BucketInfo& bucket : buckets) {
    pugi::xml_node node = list.append_child("Bucket");
    AppendText(node, "Name", bucket.name);
    AppendText(node, "CreationDate", FormatIso8601(bucket.creation_date));
  }
  return xml_internal::Serialize(doc);
}

}  // namespace reelfs::s3

#include "s3/protocol/request_codecs.h"

#include <utility>

#include "common/strings.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/time_format.h"
#include "s3/protocol/xml_internal.h"

namespace reelfs::s3 {
namespace {

using xml_internal::AppendText;
using xml_internal::Child;
using xml_internal::ChildText;
using xml_internal::ForEachChild;
using xml_internal::Text;

// S3's limits: part numbers 1..10000, at most 1000 keys per DeleteObjects.
constexpr int64_t kMaxPartNumber = 10000;
constexpr size_t kMaxDeleteKeys = 1000;

Result<std::string> RequiredText(const pugi::xml_node& parent, std::string_view name) {
  pugi::xml_node node = Child(parent, name);
  if (!node) {
    return Status::InvalidArgument("malformed XML: <" +
                                   std::string(xml_internal::LocalName(parent)) + "> without <" +
                                   std::string(name) + ">");
  }
  return Text(node);
}

// A response that should be `root_name` may be an <Error> document with status 200 (S3 does
// this for CompleteMultipartUpload and CopyObject when it fails after sending the headers).
// Returns the error as a Status, or OK when the body is not an error document.
Status ErrorDocumentStatus(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size(), xml_internal::kParseOptions, pugi::encoding_utf8)) {
    return Status::Ok();  // the caller's own parse reports the malformed XML
  }
  pugi::xml_node root = doc.document_element();
  if (!root || xml_internal::LocalName(root) != "Error") return Status::Ok();
  Result<S3Error> error = ParseErrorXml(xml);
  if (!error.ok()) return std::move(error).status();
  return S3ErrorToStatus(*error);
}

Result<RestoreTier> ParseTier(std::string_view text) {
  std::string_view t = Trim(text, kWhitespace);
  if (t == "Standard") return RestoreTier::kStandard;
  if (t == "Bulk") return RestoreTier::kBulk;
  if (t == "Expedited") return RestoreTier::kExpedited;
  return Status::InvalidArgument(
      "malformed XML: <Tier> must be Standard, Bulk or Expedited, got '" +
      std::string(t.substr(0, 64)) + "'");
}

}  // namespace

std::string_view RestoreTierName(RestoreTier tier) {
  switch (tier) {
    case RestoreTier::kStandard:
      return "Standard";
    case RestoreTier::kBulk:
      return "Bulk";
    case RestoreTier::kExpedited:
      return "Expedited";
  }
  return "Standard";
}

std::string EncodeInitiateMultipartUploadResult(const InitiateMultipartUploadResult& r) {
  pugi::xml_document doc;
  pugi::xml_node root =
      xml_internal::NewDocument(doc, "InitiateMultipartUploadResult", /*with_ns=*/true);
  AppendText(root, "Bucket", r.bucket);
  AppendText(root, "Key", r.key);
  AppendText(root, "UploadId", r.upload_id);
  return xml_internal::Serialize(doc);
}

Result<InitiateMultipartUploadResult> ParseInitiateMultipartUploadResult(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "InitiateMultipartUploadResult", doc));
  InitiateMultipartUploadResult r;
  r.bucket = ChildText(root, "Bucket");
  r.key = ChildText(root, "Key");
  REELFS_ASSIGN_OR_RETURN(r.upload_id, RequiredText(root, "UploadId"));
  if (Trim(r.upload_id, kWhitespace).empty()) {
    return Status::InvalidArgument("malformed XML: empty <UploadId>");
  }
  return r;
}

std::string EncodeCompleteMultipartUpload(const std::vector<CompletedPart>& parts) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "CompleteMultipartUpload", /*with_ns=*/true);
  for (const CompletedPart& part : parts) {
    pugi::xml_node node = root.append_child("Part");
    AppendText(node, "PartNumber", std::to_string(part.part_number));
    AppendText(node, "ETag", xml_internal::QuoteEtag(part.etag));
  }
  return xml_internal::Serialize(doc);
}

Result<std::vector<CompletedPart>> ParseCompleteMultipartUpload(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "CompleteMultipartUpload", doc));
  std::vector<CompletedPart> parts;
  Status status;
  ForEachChild(root, "Part", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    pugi::xml_node number = Child(node, "PartNumber");
    pugi::xml_node etag = Child(node, "ETag");
    if (!number || !etag) {
      status = Status::InvalidArgument("malformed XML: <Part> needs <PartNumber> and <ETag>");
      return;
    }
    Result<int64_t> n =
        xml_internal::ParseIntInRange(Text(number), "PartNumber", 1, kMaxPartNumber);
    if (!n.ok()) {
      status = std::move(n).status();
      return;
    }
    parts.push_back(CompletedPart{static_cast<int>(*n), xml_internal::StripEtagQuotes(Text(etag))});
  });
  REELFS_RETURN_IF_ERROR(status);
  // Order and duplicates are the server's to judge (InvalidPartOrder); an empty list is what AWS
  // calls MalformedXML.
  if (parts.empty()) return Status::InvalidArgument("malformed XML: no <Part> in request");
  return parts;
}

std::string EncodeCompleteMultipartUploadResult(const CompleteMultipartUploadResult& r) {
  pugi::xml_document doc;
  pugi::xml_node root =
      xml_internal::NewDocument(doc, "CompleteMultipartUploadResult", /*with_ns=*/true);
  AppendText(root, "Location", r.location);
  AppendText(root, "Bucket", r.bucket);
  AppendText(root, "Key", r.key);
  AppendText(root, "ETag", xml_internal::QuoteEtag(r.etag));
  return xml_internal::Serialize(doc);
}

Result<CompleteMultipartUploadResult> ParseCompleteMultipartUploadResult(std::string_view xml) {
  REELFS_RETURN_IF_ERROR(ErrorDocumentStatus(xml));
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "CompleteMultipartUploadResult", doc));
  CompleteMultipartUploadResult r;
  r.location = ChildText(root, "Location");
  r.bucket = ChildText(root, "Bucket");
  r.key = ChildText(root, "Key");
  REELFS_ASSIGN_OR_RETURN(std::string etag, RequiredText(root, "ETag"));
  r.etag = xml_internal::StripEtagQuotes(etag);
  return r;
}

std::string EncodeDeleteObjects(const DeleteObjectsInput& input) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "Delete", /*with_ns=*/true);
  if (input.quiet) AppendText(root, "Quiet", "true");
  for (const std::string& key : input.keys) {
    AppendText(root.append_child("Object"), "Key", key);
  }
  return xml_internal::Serialize(doc);
}

Result<DeleteObjectsInput> ParseDeleteObjects(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root, xml_internal::ParseDocument(xml, "Delete", doc));
  DeleteObjectsInput input;
  if (pugi::xml_node quiet = Child(root, "Quiet")) {
    REELFS_ASSIGN_OR_RETURN(input.quiet, xml_internal::ParseBool(Text(quiet), "Quiet"));
  }
  Status status;
  ForEachChild(root, "Object", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    Result<std::string> key = RequiredText(node, "Key");
    if (!key.ok()) {
      status = std::move(key).status();
      return;
    }
    input.keys.push_back(std::move(key).value());
  });
  REELFS_RETURN_IF_ERROR(status);
  if (input.keys.empty()) return Status::InvalidArgument("malformed XML: no <Object> in <Delete>");
  if (input.keys.size() > kMaxDeleteKeys) {
    return Status::InvalidArgument("malformed XML: " + std::to_string(input.keys.size()) +
                                   " objects in <Delete>, at most 1000 allowed");
  }
  return input;
}

std::string EncodeDeleteResult(const DeleteObjectsResult& result) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "DeleteResult", /*with_ns=*/true);
  for (const std::string& key : result.deleted) {
    AppendText(root.append_child("Deleted"), "Key", key);
  }
  for (const DeleteError& error : result.errors) {
    pugi::xml_node node = root.append_child("Error");
    AppendText(node, "Key", error.key);
    AppendText(node, "Code", error.code);
    AppendText(node, "Message", error.message);
  }
  return xml_internal::Serialize(doc);
}

Result<DeleteObjectsResult> ParseDeleteResult(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "DeleteResult", doc));
  DeleteObjectsResult result;
  Status status;
  ForEachChild(root, "Deleted", [&](const pugi::xml_node& node) {
    if (!status.ok()) return;
    Result<std::string> key = RequiredText(node, "Key");
    if (!key.ok()) {
      status = std::move(key).status();
      return;
    }
    result.deleted.push_back(std::move(key).value());
  });
  REELFS_RETURN_IF_ERROR(status);
  ForEachChild(root, "Error", [&](const pugi::xml_node& node) {
    result.errors.push_back(DeleteError{ChildText(node, "Key"),
                                        std::string(Trim(ChildText(node, "Code"), kWhitespace)),
                                        ChildText(node, "Message")});
  });
  return result;
}

namespace {

// CopyObjectResult and CopyPartResult: one shape under two root names.
std::string EncodeCopyResult(const CopyObjectResult& r, const char* root_name) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, root_name, /*with_ns=*/true);
  AppendText(root, "LastModified", FormatIso8601(r.last_modified));
  AppendText(root, "ETag", xml_internal::QuoteEtag(r.etag));
  return xml_internal::Serialize(doc);
}

Result<CopyObjectResult> ParseCopyResult(std::string_view xml, const char* root_name) {
  REELFS_RETURN_IF_ERROR(ErrorDocumentStatus(xml));
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root, xml_internal::ParseDocument(xml, root_name, doc));
  CopyObjectResult r;
  REELFS_ASSIGN_OR_RETURN(std::string etag, RequiredText(root, "ETag"));
  r.etag = xml_internal::StripEtagQuotes(etag);
  if (pugi::xml_node modified = Child(root, "LastModified")) {
    std::string text(Trim(Text(modified), kWhitespace));
    Result<WallTime> t = ParseIso8601(text);
    if (!t.ok()) {
      return Status::InvalidArgument("malformed XML: <LastModified> is not an ISO 8601 time: '" +
                                     text.substr(0, 64) + "'");
    }
    r.last_modified = *t;
  }
  return r;
}

}  // namespace

std::string EncodeCopyObjectResult(const CopyObjectResult& r) {
  return EncodeCopyResult(r, "CopyObjectResult");
}

Result<CopyObjectResult> ParseCopyObjectResult(std::string_view xml) {
  return ParseCopyResult(xml, "CopyObjectResult");
}

std::string EncodeCopyPartResult(const CopyPartResult& r) {
  return EncodeCopyResult(r, "CopyPartResult");
}

Result<CopyPartResult> ParseCopyPartResult(std::string_view xml) {
  return ParseCopyResult(xml, "CopyPartResult");
}

std::string EncodeRestoreRequest(const RestoreRequestBody& body) {
  pugi::xml_document doc;
  pugi::xml_node root = xml_internal::NewDocument(doc, "RestoreRequest", /*with_ns=*/true);
  if (body.days.has_value()) AppendText(root, "Days", std::to_string(*body.days));
  AppendText(root.append_child("GlacierJobParameters"), "Tier", RestoreTierName(body.tier));
  return xml_internal::Serialize(doc);
}

Result<RestoreRequestBody> ParseRestoreRequest(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "RestoreRequest", doc));
  if (Child(root, "Tier")) {
    // AWS rejects this too; accepting it would hide a client bug that AWS would expose.
    return Status::InvalidArgument(
        "malformed XML: <Tier> belongs inside <GlacierJobParameters>, not <RestoreRequest>");
  }
  RestoreRequestBody body;
  if (pugi::xml_node days = Child(root, "Days")) {
    REELFS_ASSIGN_OR_RETURN(int64_t n, xml_internal::ParseIntInRange(
                                           Text(days), "Days", 1, std::numeric_limits<int>::max()));
    body.days = static_cast<int>(n);
  }
  if (pugi::xml_node tier = Child(Child(root, "GlacierJobParameters"), "Tier")) {
    REELFS_ASSIGN_OR_RETURN(body.tier, ParseTier(Text(tier)));
  }
  return body;
}

Result<std::string> ParseCreateBucketConfiguration(std::string_view xml) {
  if (Trim(xml, kWhitespace).empty()) return std::string();
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          xml_internal::ParseDocument(xml, "CreateBucketConfiguration", doc));
  return std::string(Trim(ChildText(root, "LocationConstraint"), kWhitespace));
}

}  // namespace reelfs::s3

#include "s3/protocol/error_codec.h"

#include <utility>

#include "common/s3_error_table.h"
#include "common/strings.h"
#include "s3/protocol/xml_internal.h"

namespace reelfs::s3 {
namespace {

using xml_internal::Child;
using xml_internal::ChildText;

}  // namespace

Result<S3Error> ParseErrorXml(std::string_view xml) {
  pugi::xml_document doc;
  REELFS_ASSIGN_OR_RETURN(pugi::xml_node root, xml_internal::ParseDocument(xml, "Error", doc));
  if (!Child(root, "Code")) {
    return Status::InvalidArgument("malformed XML: <Error> without <Code>");
  }
  S3Error error;
  error.code = std::string(Trim(ChildText(root, "Code"), kWhitespace));
  error.message = ChildText(root, "Message");
  error.resource = ChildText(root, "Resource");
  if (error.resource.empty()) {
    // Some errors name the object instead of a resource path (NoSuchKey: <Key>, <BucketName>).
    std::string bucket = ChildText(root, "BucketName");
    std::string key = ChildText(root, "Key");
    if (!bucket.empty() || !key.empty()) {
      error.resource = "/" + bucket + (key.empty() ? "" : "/" + key);
    }
  }
  error.request_id = ChildText(root, "RequestId");
  error.storage_class = ChildText(root, "StorageClass");
  error.access_tier = ChildText(root, "AccessTier");
  return error;
}

std::string EncodeErrorXml(const S3Error& error) {
  pugi::xml_document doc;
  // AWS error documents carry no namespace.
  pugi::xml_node root = xml_internal::NewDocument(doc, "Error", /*with_ns=*/false);
  xml_internal::AppendText(root, "Code", error.code);
  xml_internal::AppendText(root, "Message", error.message);
  if (!error.storage_class.empty()) {
    xml_internal::AppendText(root, "StorageClass", error.storage_class);
  }
  if (!error.access_tier.empty()) xml_internal::AppendText(root, "AccessTier", error.access_tier);
  if (!error.resource.empty()) xml_internal::AppendText(root, "Resource", error.resource);
  xml_internal::AppendText(root, "RequestId", error.request_id);
  return xml_internal::Serialize(doc);
}

Status S3ErrorToStatus(const S3Error& error) {
  // The code and the reason are decided here, once, by the shared table (common/s3_error_table.h).
  const S3ErrorClass kind = ClassifyS3Error(error.http_status, error.code);
  const int documented = error.code.empty() ? 0 : DocumentedHttpStatus(error.code);

  // "NoSuchKey: The specified key does not exist. (/bucket/key)", or "HTTP 404 (/bucket/key)"
  // when the response had no body.
  std::string message =
      error.code.empty() ? "HTTP " + std::to_string(error.http_status) : error.code;
  if (!error.message.empty()) message += ": " + error.message;
  if (!error.storage_class.empty()) message += " [storage class " + error.storage_class + "]";
  if (!error.resource.empty()) message += " (" + error.resource + ")";

  StatusDetail detail;
  // A 200 response carrying an error document (CompleteMultipartUpload) has no useful status:
  // use the one S3 documents for the code.
  detail.http_status = (error.http_status == 0 || error.http_status == 200) && documented != 0
                           ? documented
                           : error.http_status;
  detail.s3_code = error.code;
  detail.request_id = error.request_id;
  return Status(kind.code, kind.reason, std::move(message), std::move(detail));
}

int HttpStatusForErrorCode(std::string_view code) {
  const int documented = DocumentedHttpStatus(code);
  return documented != 0 ? documented : 500;
}

}  // namespace reelfs::s3

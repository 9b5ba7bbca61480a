#include "s3/protocol/error_codec.h"

#include <array>
#include <utility>

#include "common/strings.h"
#include "s3/protocol/xml_internal.h"

namespace reelfs::s3 {
namespace {

using xml_internal::Child;
using xml_internal::ChildText;

struct CodeRow {
  std::string_view code;
  int http_status;
  StatusCode status;
};

// The AWS error-code table (docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), with the
// Status code each maps to. The Status code is chosen by what the caller should do next, not by
// the HTTP class: e.g. InvalidObjectState is a 403 but means "restore first" (kFailedPrecondition),
// and NotImplemented is a 5xx that retrying cannot fix (kUnimplemented).
constexpr std::array kCodeTable = {
    // Transient: retry with backoff.
    CodeRow{"InternalError", 500, StatusCode::kUnavailable},
    CodeRow{"ServiceUnavailable", 503, StatusCode::kUnavailable},
    CodeRow{"SlowDown", 503, StatusCode::kUnavailable},
    CodeRow{"RequestTimeout", 400, StatusCode::kUnavailable},
    CodeRow{"Throttling", 503, StatusCode::kUnavailable},
    CodeRow{"ThrottlingException", 503, StatusCode::kUnavailable},
    CodeRow{"RequestLimitExceeded", 503, StatusCode::kUnavailable},
    // A conflicting operation on the same resource is in progress: retry the whole sequence.
    CodeRow{"OperationAborted", 409, StatusCode::kAborted},
    // Missing things.
    CodeRow{"NoSuchKey", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchBucket", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchUpload", 404, StatusCode::kNotFound},
    CodeRow{"NoSuchVersion", 404, StatusCode::kNotFound},
    // Authorization: the caller may not do this.
    CodeRow{"AccessDenied", 403, StatusCode::kPermissionDenied},
    CodeRow{"AllAccessDisabled", 403, StatusCode::kPermissionDenied},
    CodeRow{"AccountProblem", 403, StatusCode::kPermissionDenied},
    // Authentication: keys, signature or clock are wrong.
    CodeRow{"SignatureDoesNotMatch", 403, StatusCode::kUnauthenticated},
    CodeRow{"InvalidAccessKeyId", 403, StatusCode::kUnauthenticated},
    CodeRow{"RequestTimeTooSkewed", 403, StatusCode::kUnauthenticated},
    CodeRow{"ExpiredToken", 400, StatusCode::kUnauthenticated},
    CodeRow{"InvalidToken", 400, StatusCode::kUnauthenticated},
    CodeRow{"TokenRefreshRequired", 400, StatusCode::kUnauthenticated},
    // State of the world must change first.
    CodeRow{"InvalidObjectState", 403, StatusCode::kFailedPrecondition},
    CodeRow{"PreconditionFailed", 412, StatusCode::kFailedPrecondition},
    CodeRow{"BucketNotEmpty", 409, StatusCode::kFailedPrecondition},
    CodeRow{"InvalidBucketState", 409, StatusCode::kFailedPrecondition},
    CodeRow{"PermanentRedirect", 301, StatusCode::kFailedPrecondition},
    // Ranges.
    CodeRow{"InvalidRange", 416, StatusCode::kOutOfRange},
    // Already there.
    CodeRow{"RestoreAlreadyInProgress", 409, StatusCode::kAlreadyExists},
    CodeRow{"BucketAlreadyExists", 409, StatusCode::kAlreadyExists},
    CodeRow{"BucketAlreadyOwnedByYou", 409, StatusCode::kAlreadyExists},
    // Not supported by this server.
    CodeRow{"NotImplemented", 501, StatusCode::kUnimplemented},
    // The request itself is wrong: sending it again will not help.
    CodeRow{"MalformedXML", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidArgument", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidRequest", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidBucketName", 400, StatusCode::kInvalidArgument},
    CodeRow{"KeyTooLongError", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidPart", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidPartOrder", 400, StatusCode::kInvalidArgument},
    CodeRow{"EntityTooSmall", 400, StatusCode::kInvalidArgument},
    CodeRow{"EntityTooLarge", 400, StatusCode::kInvalidArgument},
    CodeRow{"XAmzContentSHA256Mismatch", 400, StatusCode::kInvalidArgument},
    CodeRow{"BadDigest", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidDigest", 400, StatusCode::kInvalidArgument},
    CodeRow{"IncompleteBody", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidURI", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidStorageClass", 400, StatusCode::kInvalidArgument},
    CodeRow{"InvalidTag", 400, StatusCode::kInvalidArgument},
    CodeRow{"MetadataTooLarge", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingRequestBodyError", 400, StatusCode::kInvalidArgument},
    CodeRow{"UnexpectedContent", 400, StatusCode::kInvalidArgument},
    CodeRow{"AuthorizationHeaderMalformed", 400, StatusCode::kInvalidArgument},
    CodeRow{"AuthorizationQueryParametersError", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingSecurityHeader", 400, StatusCode::kInvalidArgument},
    CodeRow{"MissingContentLength", 411, StatusCode::kInvalidArgument},
    CodeRow{"MethodNotAllowed", 405, StatusCode::kInvalidArgument},
};

const CodeRow* FindCode(std::string_view code) {
  for (const CodeRow& row : kCodeTable) {
    if (row.code == code) return &row;
  }
  return nullptr;
}

// For errors without a (known) code: HEAD responses have no body, and servers invent codes.
StatusCode StatusForHttp(int http_status) {
  if (http_status >= 500 || http_status == 429 || http_status == 408) {
    return http_status == 501 ? StatusCode::kUnimplemented : StatusCode::kUnavailable;
  }
  switch (http_status) {
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
    case 410:
      return StatusCode::kNotFound;
    // A bare 409 is a conflict with a concurrent change: retry the higher-level sequence.
    case 409:
      return StatusCode::kAborted;
    case 412:
      return StatusCode::kFailedPrecondition;
    case 416:
      return StatusCode::kOutOfRange;
    default:
      break;
  }
  if (http_status >= 400) return StatusCode::kInvalidArgument;
  return StatusCode::kUnknown;
}

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
  const CodeRow* row = error.code.empty() ? nullptr : FindCode(error.code);
  StatusCode code = row ? row->status : StatusForHttp(error.http_status);
  if (code == StatusCode::kOk) code = StatusCode::kUnknown;

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
  detail.http_status = (error.http_status == 0 || error.http_status == 200) && row
                           ? row->http_status
                           : error.http_status;
  detail.s3_code = error.code;
  detail.request_id = error.request_id;
  return Status(code, std::move(message), std::move(detail));
}

int HttpStatusForErrorCode(std::string_view code) {
  const CodeRow* row = FindCode(code);
  return row ? row->http_status : 500;
}

}  // namespace reelfs::s3

#include "s3/protocol/error_codec.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

TEST_SUITE("s3") {
  TEST_CASE("ParseErrorXml reads an AWS NoSuchKey document") {
    constexpr std::string_view kXml = R"(<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>NoSuchKey</Code>
  <Message>The specified key does not exist.</Message>
  <Key>photos/cat.jpg</Key>
  <RequestId>4442587FB7D0A2F9</RequestId>
  <HostId>abc=</HostId>
</Error>)";
    Result<S3Error> e = ParseErrorXml(kXml);
    REQUIRE(e.ok());
    CHECK(e->code == "NoSuchKey");
    CHECK(e->message == "The specified key does not exist.");
    CHECK(e->request_id == "4442587FB7D0A2F9");
    CHECK(e->resource == "//photos/cat.jpg");
  }

  TEST_CASE("ParseErrorXml reads the versitygw InvalidObjectState error") {
    constexpr std::string_view kXml =
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<Error><Code>InvalidObjectState</Code>)"
        R"(<Message>The operation is not valid for the object's storage class</Message>)"
        R"(<Resource>/archive/data/shard-0001.tar</Resource><RequestId></RequestId>)"
        R"(<HostId></HostId><StorageClass>GLACIER</StorageClass></Error>)";
    Result<S3Error> e = ParseErrorXml(kXml);
    REQUIRE(e.ok());
    CHECK(e->code == "InvalidObjectState");
    CHECK(e->resource == "/archive/data/shard-0001.tar");
    CHECK(e->storage_class == "GLACIER");
    e->http_status = 403;
    Status s = S3ErrorToStatus(*e);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.reason() == StatusReason::kArchived);
    CHECK(s.detail().http_status == 403);
    CHECK(s.detail().s3_code == "InvalidObjectState");
    CHECK(s.message().find("InvalidObjectState: The operation") == 0);
    CHECK(s.message().find("/archive/data/shard-0001.tar") != std::string_view::npos);
    CHECK_FALSE(IsRetryable(s));
  }

  TEST_CASE("ParseErrorXml accepts the S3 namespace and an s3rver-style body") {
    constexpr std::string_view kXml =
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<Error xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Code>NoSuchBucket</Code>)"
        R"(<Message>The specified bucket does not exist</Message>)"
        R"(<BucketName>missing</BucketName></Error>)";
    Result<S3Error> e = ParseErrorXml(kXml);
    REQUIRE(e.ok());
    CHECK(e->code == "NoSuchBucket");
    CHECK(e->resource == "/missing");
  }

  TEST_CASE("ParseErrorXml rejects malformed or foreign documents") {
    for (std::string_view xml :
         {std::string_view(""), std::string_view("   "), std::string_view("<Error><Code>X"),
          std::string_view("<NotAnError/>"),
          std::string_view("<Error><Message>m</Message></Error>"),
          std::string_view("not xml at all"), std::string_view("<Error></Err>")}) {
      CAPTURE(xml);
      Result<S3Error> e = ParseErrorXml(xml);
      REQUIRE_FALSE(e.ok());
      CHECK(e.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("EncodeErrorXml round-trips and escapes") {
    S3Error in;
    in.code = "InvalidObjectState";
    in.message = "Object <a & b> is archived";
    in.resource = "/b/k&<\"";
    in.request_id = "req-1";
    in.storage_class = "GLACIER";
    in.access_tier = "ARCHIVE_ACCESS";
    std::string xml = EncodeErrorXml(in);
    CHECK(xml.find("&amp;") != std::string::npos);
    Result<S3Error> out = ParseErrorXml(xml);
    REQUIRE(out.ok());
    CHECK(out->code == in.code);
    CHECK(out->message == in.message);
    CHECK(out->resource == in.resource);
    CHECK(out->request_id == in.request_id);
    CHECK(out->storage_class == in.storage_class);
    CHECK(out->access_tier == in.access_tier);
  }

  TEST_CASE("S3ErrorToStatus maps codes by retry semantics, and sets the reason") {
    struct Row {
      const char* code;
      int http;
      StatusCode want;
      StatusReason reason = StatusReason::kNone;
    };
    const Row rows[] = {
        {"SlowDown", 503, StatusCode::kUnavailable},
        {"InternalError", 500, StatusCode::kUnavailable},
        {"ServiceUnavailable", 503, StatusCode::kUnavailable},
        {"RequestTimeout", 400, StatusCode::kUnavailable},
        {"NoSuchKey", 404, StatusCode::kNotFound},
        {"NoSuchBucket", 404, StatusCode::kNotFound},
        {"NoSuchUpload", 404, StatusCode::kNotFound},
        {"AccessDenied", 403, StatusCode::kPermissionDenied},
        {"SignatureDoesNotMatch", 403, StatusCode::kUnauthenticated},
        {"InvalidAccessKeyId", 403, StatusCode::kUnauthenticated},
        {"InvalidObjectState", 403, StatusCode::kFailedPrecondition, StatusReason::kArchived},
        {"InvalidRange", 416, StatusCode::kOutOfRange},
        {"PreconditionFailed", 412, StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
        {"RestoreAlreadyInProgress", 409, StatusCode::kAlreadyExists,
         StatusReason::kRestoreInProgress},
        {"GlacierExpeditedRetrievalNotAvailable", 503, StatusCode::kUnavailable,
         StatusReason::kTierUnavailable},
        {"BucketAlreadyExists", 409, StatusCode::kAlreadyExists},
        {"BucketAlreadyOwnedByYou", 409, StatusCode::kAlreadyExists},
        {"BucketNotEmpty", 409, StatusCode::kFailedPrecondition},
        {"EntityTooLarge", 400, StatusCode::kInvalidArgument},
        {"InvalidArgument", 400, StatusCode::kInvalidArgument},
        {"MalformedXML", 400, StatusCode::kInvalidArgument},
        {"InvalidPart", 400, StatusCode::kInvalidArgument},
        {"InvalidPartOrder", 400, StatusCode::kInvalidArgument},
        {"NotImplemented", 501, StatusCode::kUnimplemented},
        // Unknown codes fall back to the HTTP status.
        {"WeirdVendorCode", 503, StatusCode::kUnavailable},
        {"WeirdVendorCode", 404, StatusCode::kNotFound},
        {"WeirdVendorCode", 400, StatusCode::kInvalidArgument},
        {"WeirdVendorCode", 0, StatusCode::kUnknown},
        // HEAD: no body, no code.
        {"", 404, StatusCode::kNotFound},
        {"", 403, StatusCode::kPermissionDenied},
        {"", 401, StatusCode::kUnauthenticated},
        {"", 412, StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
        {"WeirdVendorCode", 412, StatusCode::kFailedPrecondition, StatusReason::kObjectChanged},
        {"", 416, StatusCode::kOutOfRange},
        {"", 409, StatusCode::kAborted},
        {"", 429, StatusCode::kUnavailable},
        {"", 500, StatusCode::kUnavailable},
        {"", 502, StatusCode::kUnavailable},
        {"", 503, StatusCode::kUnavailable},
        {"", 400, StatusCode::kInvalidArgument},
        {"", 0, StatusCode::kUnknown},
    };
    for (const Row& row : rows) {
      CAPTURE(row.code);
      CAPTURE(row.http);
      S3Error e;
      e.code = row.code;
      e.http_status = row.http;
      e.request_id = "rid";
      Status s = S3ErrorToStatus(e);
      CHECK(s.code() == row.want);
      CHECK(s.reason() == row.reason);
      CHECK(s.detail().s3_code == row.code);
      CHECK(s.detail().request_id == "rid");
      if (row.http != 0) CHECK(s.detail().http_status == row.http);
    }
  }

  TEST_CASE("S3ErrorToStatus message and detail") {
    S3Error e;
    e.http_status = 404;
    e.code = "NoSuchKey";
    e.message = "The specified key does not exist.";
    e.resource = "/bucket/key";
    Status s = S3ErrorToStatus(e);
    CHECK(s.message() == "NoSuchKey: The specified key does not exist. (/bucket/key)");

    S3Error head;
    head.http_status = 404;
    head.resource = "/bucket/key";
    CHECK(S3ErrorToStatus(head).message() == "HTTP 404 (/bucket/key)");

    // An error document inside a 200 (CompleteMultipartUpload) gets the documented status.
    S3Error in_200;
    in_200.http_status = 200;
    in_200.code = "InternalError";
    Status s200 = S3ErrorToStatus(in_200);
    CHECK(s200.code() == StatusCode::kUnavailable);
    CHECK(s200.detail().http_status == 500);
  }

  TEST_CASE("HttpStatusForErrorCode follows the AWS table") {
    struct Row {
      const char* code;
      int http;
    };
    const Row rows[] = {
        {"NoSuchKey", 404},
        {"NoSuchBucket", 404},
        {"NoSuchUpload", 404},
        {"AccessDenied", 403},
        {"SignatureDoesNotMatch", 403},
        {"InvalidAccessKeyId", 403},
        {"RequestTimeTooSkewed", 403},
        {"InvalidObjectState", 403},
        {"InvalidRange", 416},
        {"MalformedXML", 400},
        {"InvalidArgument", 400},
        {"InvalidBucketName", 400},
        {"KeyTooLongError", 400},
        {"InvalidPart", 400},
        {"InvalidPartOrder", 400},
        {"EntityTooSmall", 400},
        {"BucketAlreadyExists", 409},
        {"BucketAlreadyOwnedByYou", 409},
        {"BucketNotEmpty", 409},
        {"RestoreAlreadyInProgress", 409},
        {"PreconditionFailed", 412},
        {"NotImplemented", 501},
        {"InternalError", 500},
        {"SlowDown", 503},
        {"ServiceUnavailable", 503},
        {"MethodNotAllowed", 405},
        {"XAmzContentSHA256Mismatch", 400},
        {"BadDigest", 400},
        {"InvalidDigest", 400},
        {"MissingContentLength", 411},
        {"AuthorizationHeaderMalformed", 400},
        {"SomethingNew", 500},
        {"", 500},
    };
    for (const Row& row : rows) {
      CAPTURE(row.code);
      CHECK(HttpStatusForErrorCode(row.code) == row.http);
    }
  }
}

}  // namespace
}  // namespace reelfs::s3

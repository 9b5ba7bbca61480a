#include "s3/protocol/request_codecs.h"

#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/time_format.h"

namespace reelfs::s3 {
namespace {

TEST_SUITE("s3") {
  TEST_CASE("InitiateMultipartUploadResult round-trips and parses AWS") {
    InitiateMultipartUploadResult in{"bkt", "a/b&c", "VXBsb2FkIElE"};
    Result<InitiateMultipartUploadResult> out =
        ParseInitiateMultipartUploadResult(EncodeInitiateMultipartUploadResult(in));
    REQUIRE(out.ok());
    CHECK(out->bucket == in.bucket);
    CHECK(out->key == in.key);
    CHECK(out->upload_id == in.upload_id);

    Result<InitiateMultipartUploadResult> aws = ParseInitiateMultipartUploadResult(
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<Bucket>example-bucket</Bucket><Key>example-object</Key>"
        "<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
        "</InitiateMultipartUploadResult>");
    REQUIRE(aws.ok());
    CHECK(aws->upload_id == "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");

    CHECK_FALSE(
        ParseInitiateMultipartUploadResult("<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                                           "</InitiateMultipartUploadResult>")
            .ok());
    CHECK_FALSE(
        ParseInitiateMultipartUploadResult("<InitiateMultipartUploadResult><UploadId> </UploadId>"
                                           "</InitiateMultipartUploadResult>")
            .ok());
  }

  TEST_CASE("CompleteMultipartUpload round-trips with quoted ETags") {
    std::vector<CompletedPart> in = {{1, "a54357aff0632cce46d942af68356b38"},
                                     {2, "0c78aef83f66abc1fa1e8477f296d394"},
                                     {10000, "acbd18db4cc2f85cedef654fccc4a4d8"}};
    std::string xml = EncodeCompleteMultipartUpload(in);
    CHECK((xml.find("&quot;a54357aff0632cce46d942af68356b38&quot;") != std::string::npos ||
           xml.find("\"a54357aff0632cce46d942af68356b38\"") != std::string::npos));
    Result<std::vector<CompletedPart>> out = ParseCompleteMultipartUpload(xml);
    REQUIRE(out.ok());
    REQUIRE(out->size() == 3);
    for (size_t i = 0; i < in.size(); ++i) {
      CHECK((*out)[i].part_number == in[i].part_number);
      CHECK((*out)[i].etag == in[i].etag);
    }
  }

  TEST_CASE("ParseCompleteMultipartUpload rejects bad parts") {
    const char* cases[] = {
        "<CompleteMultipartUpload/>",
        "<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>-3</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>99999999999999999999999</PartNumber>"
        "<ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part>",
    };
    for (const char* xml : cases) {
      CAPTURE(xml);
      Result<std::vector<CompletedPart>> out = ParseCompleteMultipartUpload(xml);
      REQUIRE_FALSE(out.ok());
      CHECK(out.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("CompleteMultipartUploadResult: result or an error inside a 200") {
    CompleteMultipartUploadResult in{"http://h/b/k", "b", "k",
                                     "3858f62230ac3c915f300c664312c11f-9"};
    std::string xml = EncodeCompleteMultipartUploadResult(in);
    Result<CompleteMultipartUploadResult> out = ParseCompleteMultipartUploadResult(xml);
    REQUIRE(out.ok());
    CHECK(out->location == in.location);
    CHECK(out->etag == in.etag);
    CHECK(out->key == "k");

    Result<CompleteMultipartUploadResult> err = ParseCompleteMultipartUploadResult(
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        "<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try "
        "again.</Message><RequestId>656c76696e6727732072657175657374</RequestId>"
        "<HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>");
    REQUIRE_FALSE(err.ok());
    CHECK(err.status().code() == StatusCode::kUnavailable);
    CHECK(err.status().detail().s3_code == "InternalError");
    CHECK(err.status().detail().request_id == "656c76696e6727732072657175657374");

    Result<CompleteMultipartUploadResult> bad_part = ParseCompleteMultipartUploadResult(
        "<Error><Code>InvalidPart</Code><Message>m</Message></Error>");
    REQUIRE_FALSE(bad_part.ok());
    CHECK(bad_part.status().code() == StatusCode::kInvalidArgument);

    CHECK(ParseCompleteMultipartUploadResult("<CompleteMultipartUploadResult><Key>k</Key>"
                                             "</CompleteMultipartUploadResult>")
              .status()
              .code() == StatusCode::kInvalidArgument);
    CHECK(ParseCompleteMultipartUploadResult("<Error><Code>X").status().code() ==
          StatusCode::kInvalidArgument);
  }

  TEST_CASE("DeleteObjects request round-trips") {
    DeleteObjectsInput in{{"a", "b/c", "x&y<z>"}, true};
    std::string xml = EncodeDeleteObjects(in);
    Result<DeleteObjectsInput> out = ParseDeleteObjects(xml);
    REQUIRE(out.ok());
    CHECK(out->keys == in.keys);
    CHECK(out->quiet);

    Result<DeleteObjectsInput> loud = ParseDeleteObjects(EncodeDeleteObjects({{"k"}, false}));
    REQUIRE(loud.ok());
    CHECK_FALSE(loud->quiet);

    // The shape the AWS CLI sends, with a VersionId we ignore.
    Result<DeleteObjectsInput> cli = ParseDeleteObjects(
        R"(<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>sample1.txt</Key>)"
        "</Object><Object><Key>sample2.txt</Key><VersionId>v1</VersionId></Object>"
        "<Quiet>true</Quiet></Delete>");
    REQUIRE(cli.ok());
    CHECK(cli->keys == std::vector<std::string>{"sample1.txt", "sample2.txt"});
    CHECK(cli->quiet);
  }

  TEST_CASE("ParseDeleteObjects rejects malformed requests") {
    std::string too_many = "<Delete>";
    for (int i = 0; i < 1001; ++i) too_many += "<Object><Key>k</Key></Object>";
    too_many += "</Delete>";
    const std::string cases[] = {
        "<Delete/>",
        "<Delete><Object><VersionId>v</VersionId></Object></Delete>",
        "<Delete><Quiet>sometimes</Quiet><Object><Key>k</Key></Object></Delete>",
        "<Delete><Object><Key>k</Key></Object>",
        "<Remove><Object><Key>k</Key></Object></Remove>",
        too_many,
    };
    for (const std::string& xml : cases) {
      CAPTURE(xml.substr(0, 100));
      Result<DeleteObjectsInput> out = ParseDeleteObjects(xml);
      REQUIRE_FALSE(out.ok());
      CHECK(out.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("DeleteResult round-trips") {
    DeleteObjectsResult in;
    in.deleted = {"a", "b&c"};
    in.errors = {{"d", "AccessDenied", "Access Denied"}};
    Result<DeleteObjectsResult> out = ParseDeleteResult(EncodeDeleteResult(in));
    REQUIRE(out.ok());
    CHECK(out->deleted == in.deleted);
    REQUIRE(out->errors.size() == 1);
    CHECK(out->errors[0].key == "d");
    CHECK(out->errors[0].code == "AccessDenied");
    CHECK(out->errors[0].message == "Access Denied");

    Result<DeleteObjectsResult> empty = ParseDeleteResult("<DeleteResult/>");
    REQUIRE(empty.ok());
    CHECK(empty->deleted.empty());
    CHECK_FALSE(ParseDeleteResult("<DeleteResult><Deleted/></DeleteResult>").ok());
  }

  TEST_CASE("CopyObjectResult round-trips, and an error inside a 200") {
    Result<std::chrono::system_clock::time_point> t = ParseIso8601("2009-10-28T22:32:00.000Z");
    REQUIRE(t.ok());
    CopyObjectResult in{"9b2cf535f27731c974343645a3985328", *t};
    Result<CopyObjectResult> out = ParseCopyObjectResult(EncodeCopyObjectResult(in));
    REQUIRE(out.ok());
    CHECK(out->etag == in.etag);
    CHECK(out->last_modified == in.last_modified);

    Result<CopyObjectResult> err =
        ParseCopyObjectResult("<Error><Code>SlowDown</Code><Message>m</Message></Error>");
    REQUIRE_FALSE(err.ok());
    CHECK(err.status().code() == StatusCode::kUnavailable);
    CHECK_FALSE(ParseCopyObjectResult("<CopyObjectResult><ETag>e</ETag><LastModified>x"
                                      "</LastModified></CopyObjectResult>")
                    .ok());
    CHECK_FALSE(ParseCopyObjectResult("<CopyObjectResult/>").ok());
  }

  TEST_CASE("CopyPartResult (UploadPartCopy) round-trips; another root or an error is refused") {
    Result<std::chrono::system_clock::time_point> t = ParseIso8601("2011-04-11T20:34:56.000Z");
    REQUIRE(t.ok());
    CopyPartResult in{"b4b3a4e4c3d2e1f0a9b8c7d6e5f40312", *t};
    const std::string xml = EncodeCopyPartResult(in);
    CHECK(xml.find("<CopyPartResult") != std::string::npos);
    CHECK(xml.find("\"b4b3a4e4c3d2e1f0a9b8c7d6e5f40312\"") != std::string::npos);
    Result<CopyPartResult> out = ParseCopyPartResult(xml);
    REQUIRE(out.ok());
    CHECK(out->etag == in.etag);
    CHECK(out->last_modified == in.last_modified);

    // AWS's documented example answer.
    Result<CopyPartResult> aws = ParseCopyPartResult(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyPartResult "
        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LastModified>2011-04-11T20:34:56.000Z"
        "</LastModified><ETag>\"9b2cf535f27731c974343645a3985328\"</ETag></CopyPartResult>");
    REQUIRE(aws.ok());
    CHECK(aws->etag == "9b2cf535f27731c974343645a3985328");

    CHECK_FALSE(ParseCopyPartResult(EncodeCopyObjectResult(in)).ok());
    CHECK_FALSE(ParseCopyObjectResult(xml).ok());
    Result<CopyPartResult> err = ParseCopyPartResult(
        "<Error><Code>InvalidObjectState</Code><Message>archived</Message></Error>");
    REQUIRE_FALSE(err.ok());
    CHECK(err.status().code() == StatusCode::kFailedPrecondition);
    CHECK(err.status().reason() == StatusReason::kArchived);
    CHECK_FALSE(ParseCopyPartResult("<CopyPartResult/>").ok());
    CHECK_FALSE(ParseCopyPartResult("<CopyPartResult><ETag>e</ETag><LastModified>x</LastModified>"
                                    "</CopyPartResult>")
                    .ok());
  }

  TEST_CASE("RestoreRequest round-trips every tier") {
    for (RestoreTier tier : {RestoreTier::kStandard, RestoreTier::kBulk, RestoreTier::kExpedited}) {
      for (std::optional<int> days :
           {std::optional<int>(), std::optional<int>(1), std::optional<int>(30)}) {
        RestoreRequestBody in{days, tier};
        std::string xml = EncodeRestoreRequest(in);
        CHECK(xml.find("<GlacierJobParameters><Tier>" + std::string(RestoreTierName(tier)) +
                       "</Tier></GlacierJobParameters>") != std::string::npos);
        Result<RestoreRequestBody> out = ParseRestoreRequest(xml);
        REQUIRE(out.ok());
        CHECK(out->days == in.days);
        CHECK(out->tier == in.tier);
      }
    }
  }

  TEST_CASE("ParseRestoreRequest defaults and rejections") {
    Result<RestoreRequestBody> minimal =
        ParseRestoreRequest("<RestoreRequest><Days>2</Days></RestoreRequest>");
    REQUIRE(minimal.ok());
    CHECK(minimal->days == 2);
    CHECK(minimal->tier == RestoreTier::kStandard);

    Result<RestoreRequestBody> aws = ParseRestoreRequest(
        R"(<RestoreRequest xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<Days>7</Days><GlacierJobParameters><Tier>Bulk</Tier></GlacierJobParameters>"
        "</RestoreRequest>");
    REQUIRE(aws.ok());
    CHECK(aws->tier == RestoreTier::kBulk);

    const char* cases[] = {
        "<RestoreRequest><Days>0</Days></RestoreRequest>",
        "<RestoreRequest><Days>-1</Days></RestoreRequest>",
        "<RestoreRequest><Days>ten</Days></RestoreRequest>",
        "<RestoreRequest><Days>99999999999</Days></RestoreRequest>",
        "<RestoreRequest><Days>1</Days><Tier>Bulk</Tier></RestoreRequest>",
        "<RestoreRequest><GlacierJobParameters><Tier>Fast</Tier></GlacierJobParameters>"
        "</RestoreRequest>",
        "<RestoreRequest><GlacierJobParameters><Tier></Tier></GlacierJobParameters>"
        "</RestoreRequest>",
        "<RestoreRequest>",
        "",
    };
    for (const char* xml : cases) {
      CAPTURE(xml);
      Result<RestoreRequestBody> out = ParseRestoreRequest(xml);
      REQUIRE_FALSE(out.ok());
      CHECK(out.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("ParseCreateBucketConfiguration") {
    Result<std::string> empty = ParseCreateBucketConfiguration("");
    REQUIRE(empty.ok());
    CHECK(empty->empty());
    Result<std::string> eu = ParseCreateBucketConfiguration(
        R"(<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>");
    REQUIRE(eu.ok());
    CHECK(*eu == "eu-west-1");
    CHECK(ParseCreateBucketConfiguration("<CreateBucketConfiguration/>").ok());
    CHECK_FALSE(ParseCreateBucketConfiguration("<CreateBucketConfiguration>").ok());
    CHECK_FALSE(ParseCreateBucketConfiguration("<Other/>").ok());
  }

  TEST_CASE("RestoreTierName") {
    CHECK(RestoreTierName(RestoreTier::kStandard) == "Standard");
    CHECK(RestoreTierName(RestoreTier::kBulk) == "Bulk");
    CHECK(RestoreTierName(RestoreTier::kExpedited) == "Expedited");
  }
}

}  // namespace
}  // namespace reelfs::s3

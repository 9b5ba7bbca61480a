#include "s3/protocol/upload_list_codec.h"

#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/time_format.h"

namespace reelfs::s3 {
namespace {

WallTime At(const char* iso) {
  Result<WallTime> t = ParseIso8601(iso);
  REQUIRE(t.ok());
  return *t;
}

constexpr const char* kDecl = R"(<?xml version="1.0" encoding="UTF-8"?>)";

TEST_SUITE("s3") {
  TEST_CASE("ListMultipartUploadsResult encodes in AWS's form") {
    ListMultipartUploadsResult r;
    r.bucket = "example-bucket";
    r.delimiter = "/";
    r.max_uploads = 2;
    r.owner_id = "reelfs";
    r.page.uploads.push_back({"sample.jpg", "0123abcd", At("2010-11-26T19:24:17.000Z"), ""});
    r.page.common_prefixes = {"photos/"};
    r.page.is_truncated = true;
    r.page.next_key_marker = "sample.jpg";
    r.page.next_upload_id_marker = "0123abcd";
    const std::string want =
        std::string(kDecl) +
        R"(<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<Bucket>example-bucket</Bucket><KeyMarker/><UploadIdMarker/>"
        "<NextKeyMarker>sample.jpg</NextKeyMarker><NextUploadIdMarker>0123abcd"
        "</NextUploadIdMarker><Delimiter>/</Delimiter><Prefix/><MaxUploads>2</MaxUploads>"
        "<IsTruncated>true</IsTruncated><Upload><Key>sample.jpg</Key><UploadId>0123abcd"
        "</UploadId><Initiator><ID>reelfs</ID><DisplayName>reelfs</DisplayName></Initiator>"
        "<Owner><ID>reelfs</ID><DisplayName>reelfs</DisplayName></Owner>"
        "<StorageClass>STANDARD</StorageClass><Initiated>2010-11-26T19:24:17.000Z</Initiated>"
        "</Upload><CommonPrefixes><Prefix>photos/</Prefix></CommonPrefixes>"
        "</ListMultipartUploadsResult>";
    CHECK(EncodeListMultipartUploadsResult(r) == want);
  }

  TEST_CASE("ListMultipartUploadsResult parses AWS's documented example") {
    // The example of the S3 API reference (ListMultipartUploads), ids shortened.
    Result<ListMultipartUploadsResult> r = ParseListMultipartUploadsResult(
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "\n  <Bucket>bucket</Bucket>\n  <KeyMarker></KeyMarker>\n  "
        "<UploadIdMarker></UploadIdMarker>"
        "\n  <NextKeyMarker>my-movie.m2ts</NextKeyMarker>"
        "\n  <NextUploadIdMarker>YW55IGlkZWE</NextUploadIdMarker>"
        "\n  <MaxUploads>3</MaxUploads>\n  <IsTruncated>true</IsTruncated>"
        "\n  <Upload>\n    <Key>my-divisor</Key>\n    <UploadId>XMgbGlrZSBl</UploadId>"
        "\n    <Initiator><ID>arn:aws:iam::111122223333:user/user1</ID>"
        "<DisplayName>user1</DisplayName></Initiator>"
        "\n    <Owner><ID>75aa57f09aa0c8ca</ID><DisplayName>OwnerDisplayName</DisplayName></Owner>"
        "\n    <StorageClass>REDUCED_REDUNDANCY</StorageClass>"
        "\n    <Initiated>2010-11-10T20:48:33.000Z</Initiated>\n  </Upload>"
        "\n  <Upload>\n    <Key>my-movie.m2ts</Key>\n    <UploadId>VXBsb2FkIElE</UploadId>"
        "\n    <StorageClass>STANDARD</StorageClass>"
        "\n    <Initiated>2010-11-10T20:48:33.000Z</Initiated>\n  </Upload>"
        "\n</ListMultipartUploadsResult>");
    REQUIRE(r.ok());
    CHECK(r->bucket == "bucket");
    CHECK(r->max_uploads == 3);
    CHECK(r->page.is_truncated);
    CHECK(r->page.next_key_marker == "my-movie.m2ts");
    CHECK(r->page.next_upload_id_marker == "YW55IGlkZWE");
    REQUIRE(r->page.uploads.size() == 2);
    CHECK(r->page.uploads[0].key == "my-divisor");
    CHECK(r->page.uploads[0].upload_id == "XMgbGlrZSBl");
    CHECK(r->page.uploads[0].storage_class == "REDUCED_REDUNDANCY");
    CHECK(r->page.uploads[0].initiated == At("2010-11-10T20:48:33.000Z"));
    CHECK(r->page.uploads[1].key == "my-movie.m2ts");
  }

  TEST_CASE("ListMultipartUploadsResult round-trips, plain and url-encoded") {
    for (bool url : {false, true}) {
      CAPTURE(url);
      ListMultipartUploadsResult in;
      in.bucket = "b";
      in.prefix = "dir with space/";
      in.delimiter = "/";
      in.key_marker = "dir with space/a+b";
      in.upload_id_marker = "ff00";
      in.max_uploads = 7;
      in.url_encode = url;
      in.owner_id = "o";
      in.page.uploads.push_back(
          {"dir with space/k&<>\"'%\r", "aa11", At("2026-01-02T03:04:05.678Z"), "GLACIER"});
      in.page.uploads.push_back(
          {"dir with space/z", "bb22", At("2026-01-02T03:04:06.000Z"), "STANDARD"});
      in.page.common_prefixes = {"dir with space/sub/"};
      in.page.is_truncated = true;
      in.page.next_key_marker = "dir with space/z";
      in.page.next_upload_id_marker = "bb22";
      const std::string xml = EncodeListMultipartUploadsResult(in);
      if (url) CHECK(xml.find("dir%20with%20space/") != std::string::npos);
      Result<ListMultipartUploadsResult> out = ParseListMultipartUploadsResult(xml);
      REQUIRE(out.ok());
      CHECK(out->bucket == in.bucket);
      CHECK(out->prefix == in.prefix);
      CHECK(out->delimiter == in.delimiter);
      CHECK(out->key_marker == in.key_marker);
      CHECK(out->upload_id_marker == in.upload_id_marker);
      CHECK(out->max_uploads == in.max_uploads);
      CHECK(out->url_encode == url);
      CHECK(out->page.uploads == in.page.uploads);
      CHECK(out->page.common_prefixes == in.page.common_prefixes);
      CHECK(out->page.is_truncated);
      CHECK(out->page.next_key_marker == in.page.next_key_marker);
      CHECK(out->page.next_upload_id_marker == in.page.next_upload_id_marker);
    }
  }

  TEST_CASE("ListMultipartUploadsResult: '+' in a url-encoded key is a space (AWS form-encodes)") {
    Result<ListMultipartUploadsResult> r = ParseListMultipartUploadsResult(
        "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
        "<Upload><Key>a+b%2Bc</Key><UploadId>1</UploadId></Upload></ListMultipartUploadsResult>");
    REQUIRE(r.ok());
    REQUIRE(r->page.uploads.size() == 1);
    CHECK(r->page.uploads[0].key == "a b+c");
  }

  TEST_CASE("ListMultipartUploadsResult rejects hostile input") {
    const char* cases[] = {
        "",
        "not xml",
        "<ListBucketResult/>",
        "<ListMultipartUploadsResult><Upload><UploadId>1</UploadId></Upload>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId> </UploadId></Upload>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>1</UploadId>"
        "<Initiated>yesterday</Initiated></Upload></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><IsTruncated>maybe</IsTruncated>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><MaxUploads>-1</MaxUploads></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><MaxUploads>99999999999999999999</MaxUploads>"
        "</ListMultipartUploadsResult>",
        // Truncated without saying where to go on: a pager would loop on the same page.
        "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
        "<Upload><Key>%zz</Key><UploadId>1</UploadId></Upload></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult/><ListMultipartUploadsResult/>",
    };
    for (const char* xml : cases) {
      CAPTURE(xml);
      Result<ListMultipartUploadsResult> r = ParseListMultipartUploadsResult(xml);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("ListPartsResult encodes in AWS's form") {
    ListPartsResult r;
    r.bucket = "example-bucket";
    r.key = "example-object";
    r.upload_id = "abcd";
    r.owner_id = "reelfs";
    r.part_number_marker = 1;
    r.max_parts = 2;
    r.page.is_truncated = true;
    r.page.next_part_number_marker = 3;
    r.page.parts.push_back(
        {2, "7778aef83f66abc1fa1e8477f296d394", 10485760, At("2010-11-10T20:48:34.000Z")});
    r.page.parts.push_back(
        {3, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 10485760, At("2010-11-10T20:48:33.000Z")});
    const std::string want =
        std::string(kDecl) +
        R"(<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<Bucket>example-bucket</Bucket><Key>example-object</Key><UploadId>abcd</UploadId>"
        "<Initiator><ID>reelfs</ID><DisplayName>reelfs</DisplayName></Initiator>"
        "<Owner><ID>reelfs</ID><DisplayName>reelfs</DisplayName></Owner>"
        "<StorageClass>STANDARD</StorageClass><PartNumberMarker>1</PartNumberMarker>"
        "<NextPartNumberMarker>3</NextPartNumberMarker><MaxParts>2</MaxParts>"
        "<IsTruncated>true</IsTruncated>"
        "<Part><PartNumber>2</PartNumber><LastModified>2010-11-10T20:48:34.000Z</LastModified>"
        "<ETag>\"7778aef83f66abc1fa1e8477f296d394\"</ETag><Size>10485760</Size></Part>"
        "<Part><PartNumber>3</PartNumber><LastModified>2010-11-10T20:48:33.000Z</LastModified>"
        "<ETag>\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"</ETag><Size>10485760</Size></Part>"
        "</ListPartsResult>";
    CHECK(EncodeListPartsResult(r) == want);
    Result<ListPartsResult> back = ParseListPartsResult(want);
    REQUIRE(back.ok());
    CHECK(back->bucket == r.bucket);
    CHECK(back->key == r.key);
    CHECK(back->upload_id == r.upload_id);
    CHECK(back->part_number_marker == 1);
    CHECK(back->max_parts == 2);
    CHECK(back->page.is_truncated);
    CHECK(back->page.next_part_number_marker == 3);
    CHECK(back->page.parts == r.page.parts);
  }

  TEST_CASE("ListPartsResult parses AWS's example with &quot; ETags and whitespace") {
    Result<ListPartsResult> r = ParseListPartsResult(
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "\n <Bucket>example-bucket</Bucket>\n <Key>example-object</Key>"
        "\n <UploadId>XXBsb2FkIElE</UploadId>\n <StorageClass>STANDARD</StorageClass>"
        "\n <PartNumberMarker>1</PartNumberMarker>\n <NextPartNumberMarker>3</NextPartNumberMarker>"
        "\n <MaxParts>2</MaxParts>\n <IsTruncated>true</IsTruncated>"
        "\n <Part>\n  <PartNumber>2</PartNumber>\n  <LastModified>2010-11-10T20:48:34.000Z"
        "</LastModified>\n  <ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag>"
        "\n  <Size>10485760</Size>\n </Part>\n</ListPartsResult>");
    REQUIRE(r.ok());
    REQUIRE(r->page.parts.size() == 1);
    CHECK(r->page.parts[0].part_number == 2);
    CHECK(r->page.parts[0].etag == "7778aef83f66abc1fa1e8477f296d394");
    CHECK(r->page.parts[0].size == 10485760);
    CHECK(r->page.next_part_number_marker == 3);
  }

  TEST_CASE("ListPartsResult rejects hostile input") {
    const char* cases[] = {
        "",
        "<ListPartsResult><Part><ETag>e</ETag></Part></ListPartsResult>",
        "<ListPartsResult><Part><PartNumber>0</PartNumber></Part></ListPartsResult>",
        "<ListPartsResult><Part><PartNumber>10001</PartNumber></Part></ListPartsResult>",
        "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>-5</Size></Part>"
        "</ListPartsResult>",
        "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>184467440737095516160</Size>"
        "</Part></ListPartsResult>",
        "<ListPartsResult><Part><PartNumber>1</PartNumber><LastModified>x</LastModified></Part>"
        "</ListPartsResult>",
        "<ListPartsResult><PartNumberMarker>abc</PartNumberMarker></ListPartsResult>",
        // Truncated, but the next marker does not move on: a pager would loop.
        "<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>",
        "<ListPartsResult><PartNumberMarker>5</PartNumberMarker><IsTruncated>true</IsTruncated>"
        "<NextPartNumberMarker>5</NextPartNumberMarker></ListPartsResult>",
        "<ListMultipartUploadsResult/>",
    };
    for (const char* xml : cases) {
      CAPTURE(xml);
      Result<ListPartsResult> r = ParseListPartsResult(xml);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace reelfs::s3

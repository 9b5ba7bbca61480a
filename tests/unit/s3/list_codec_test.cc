#include "s3/protocol/list_codec.h"

#include <chrono>
#include <map>
#include <string>

#include <doctest/doctest.h>

#include "s3/protocol/time_format.h"

namespace reelfs::s3 {
namespace {

using namespace std::chrono_literals;

WallTime Time(std::string_view iso) {
  Result<WallTime> t = ParseIso8601(iso);
  REQUIRE(t.ok());
  return *t;
}

// Shaped like an AWS ListObjectsV2 answer with delimiter "/" and
// x-amz-optional-object-attributes: RestoreStatus.
constexpr std::string_view kAwsListing = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>archive-bucket</Name>
  <Prefix>data/</Prefix>
  <KeyCount>4</KeyCount>
  <MaxKeys>3</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>data/a.bin</Key>
    <LastModified>2024-01-15T10:20:30.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>
    <ChecksumAlgorithm>CRC32</ChecksumAlgorithm>
    <Size>434234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>data/b.bin</Key>
    <LastModified>2024-01-16T00:00:00.000Z</LastModified>
    <ETag>"d41d8cd98f00b204e9800998ecf8427e-12"</ETag>
    <Size>18446744073709551615</Size>
    <StorageClass>GLACIER</StorageClass>
    <RestoreStatus>
      <IsRestoreInProgress>false</IsRestoreInProgress>
      <RestoreExpiryDate>2024-02-01T00:00:00.000Z</RestoreExpiryDate>
    </RestoreStatus>
  </Contents>
  <Contents>
    <Key>data/c.bin</Key>
    <LastModified>2024-01-17T00:00:00.000Z</LastModified>
    <ETag>"abc"</ETag>
    <Size>0</Size>
    <StorageClass>DEEP_ARCHIVE</StorageClass>
    <RestoreStatus><IsRestoreInProgress>true</IsRestoreInProgress></RestoreStatus>
  </Contents>
  <CommonPrefixes><Prefix>data/sub1/</Prefix></CommonPrefixes>
</ListBucketResult>)";

TEST_SUITE("s3") {
  TEST_CASE("ParseListObjectsV2 reads an AWS answer") {
    Result<ListObjectsPage> page = ParseListObjectsV2(kAwsListing);
    REQUIRE(page.ok());
    CHECK(page->is_truncated);
    CHECK(page->next_continuation_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    REQUIRE(page->objects.size() == 3);
    const ObjectInfo& a = page->objects[0];
    CHECK(a.key == "data/a.bin");
    CHECK(a.size == 434234);
    CHECK(a.etag == "9b2cf535f27731c974343645a3985328");
    CHECK(a.storage_class == "STANDARD");
    CHECK(a.last_modified == Time("2024-01-15T10:20:30.000Z"));
    CHECK_FALSE(a.restore.has_value());
    const ObjectInfo& b = page->objects[1];
    CHECK(b.size == UINT64_MAX);
    CHECK(b.etag == "d41d8cd98f00b204e9800998ecf8427e-12");
    CHECK(b.storage_class == "GLACIER");
    REQUIRE(b.restore.has_value());
    CHECK_FALSE(b.restore->ongoing);
    REQUIRE(b.restore->expiry.has_value());
    CHECK(*b.restore->expiry == Time("2024-02-01T00:00:00Z"));
    const ObjectInfo& c = page->objects[2];
    REQUIRE(c.restore.has_value());
    CHECK(c.restore->ongoing);
    CHECK_FALSE(c.restore->expiry.has_value());
    REQUIRE(page->common_prefixes.size() == 1);
    CHECK(page->common_prefixes[0] == "data/sub1/");
  }

  TEST_CASE("ParseListObjectsV2 tolerates no namespace and missing optional elements") {
    // s3rver-style minimal answer, and a prefixed namespace.
    Result<ListObjectsPage> page = ParseListObjectsV2(
        "<ListBucketResult><Contents><Key>k</Key></Contents>"
        "<CommonPrefixes><Prefix>p1/</Prefix><Prefix>p2/</Prefix></CommonPrefixes>"
        "</ListBucketResult>");
    REQUIRE(page.ok());
    CHECK_FALSE(page->is_truncated);
    REQUIRE(page->objects.size() == 1);
    CHECK(page->objects[0].key == "k");
    CHECK(page->objects[0].size == 0);
    CHECK(page->objects[0].storage_class == "STANDARD");
    CHECK(page->common_prefixes == std::vector<std::string>{"p1/", "p2/"});

    Result<ListObjectsPage> prefixed = ParseListObjectsV2(
        R"(<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<s3:IsTruncated>false</s3:IsTruncated><s3:Contents><s3:Key>x</s3:Key>"
        "<s3:Size>5</s3:Size></s3:Contents></s3:ListBucketResult>");
    REQUIRE(prefixed.ok());
    REQUIRE(prefixed->objects.size() == 1);
    CHECK(prefixed->objects[0].size == 5);

    Result<ListObjectsPage> empty = ParseListObjectsV2("<ListBucketResult/>");
    REQUIRE(empty.ok());
    CHECK(empty->objects.empty());
  }

  TEST_CASE("ParseListObjectsV2 decodes EncodingType=url") {
    Result<ListObjectsPage> page = ParseListObjectsV2(
        "<ListBucketResult><EncodingType>url</EncodingType>"
        "<Contents><Key>dir/a+b%2Bc%01%26.txt</Key></Contents>"
        "<CommonPrefixes><Prefix>sp%20ace/</Prefix></CommonPrefixes></ListBucketResult>");
    REQUIRE(page.ok());
    REQUIRE(page->objects.size() == 1);
    CHECK(page->objects[0].key == "dir/a b+c\x01&.txt");
    CHECK(page->common_prefixes[0] == "sp ace/");

    Result<ListObjectsPage> bad = ParseListObjectsV2(
        "<ListBucketResult><EncodingType>url</EncodingType>"
        "<Contents><Key>bad%zz</Key></Contents></ListBucketResult>");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE("ParseListObjectsV2 reads reelfs-gateway tape hints and ignores garbled ones") {
    // As reelfs-gateway writes them (gateway/s3api/archive_ops.cc, docs/protocols/tape-hints.md).
    constexpr std::string_view kHinted = R"(<ListBucketResult>
<Contents><Key>data/a</Key><Size>1</Size><StorageClass>GLACIER</StorageClass><ReelfsTape><Cartridge>RL0001L9</Cartridge><Block>1234</Block><Wrap>12</Wrap><Lpos>34567</Lpos><State>offline</State></ReelfsTape></Contents>
<Contents><Key>data/b</Key><StorageClass>GLACIER</StorageClass><ReelfsTape><Cartridge> RL0002L9 </Cartridge><Block>-1</Block><Wrap>x</Wrap><Lpos>99</Lpos><Future>1</Future></ReelfsTape></Contents>
<Contents><Key>data/c</Key><ReelfsTape><Block>99999999999999999999</Block><Cartridge/></ReelfsTape></Contents>
<Contents><Key>data/d</Key><StorageClass>STANDARD</StorageClass></Contents>
</ListBucketResult>)";
    Result<ListObjectsPage> page = ParseListObjectsV2(kHinted);
    REQUIRE(page.ok());
    REQUIRE(page->objects.size() == 4);
    using Hints = std::map<std::string, std::string>;
    CHECK(page->objects[0].hints == Hints{{"x-reelfs-tape-cartridge", "RL0001L9"},
                                          {"x-reelfs-tape-block", "1234"},
                                          {"x-reelfs-tape-position", "wrap=12,lpos=34567"},
                                          {"x-reelfs-tape-state", "offline"}});
    // Bad numbers are dropped one by one; unknown elements ignored.
    CHECK(page->objects[1].hints ==
          Hints{{"x-reelfs-tape-cartridge", "RL0002L9"}, {"x-reelfs-tape-position", "lpos=99"}});
    CHECK(page->objects[2].hints.empty());  // 2^64+ block and an empty cartridge
    CHECK(page->objects[3].hints.empty());
  }

  TEST_CASE("ParseListObjectsV2 rejects malformed and hostile input") {
    const std::string lone_brackets(100000, '<');
    std::string nested = "<ListBucketResult>";
    for (int i = 0; i < 200000; ++i) nested += "<a>";
    const std::string cases[] = {
        "",
        "<ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key></Contents>",
        "<ListAllMyBucketsResult/>",
        "<ListBucketResult><Contents><Size>3</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>abc</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>18446744073709551616</Size></Contents>"
        "</ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>1e3</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><LastModified>yesterday</LastModified>"
        "</Contents></ListBucketResult>",
        "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><RestoreStatus><IsRestoreInProgress>2"
        "</IsRestoreInProgress></RestoreStatus></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult><extra/>",
        nested,
        lone_brackets,
    };
    for (const std::string& xml : cases) {
      CAPTURE(xml.substr(0, 120));
      Result<ListObjectsPage> page = ParseListObjectsV2(xml);
      REQUIRE_FALSE(page.ok());
      CHECK(page.status().code() == StatusCode::kInvalidArgument);
      CHECK_FALSE(page.status().message().empty());
    }
  }

  TEST_CASE("ParseListObjectsV2 copes with deep nesting") {
    // Well-formed but 200k levels deep inside <Contents>: pugixml parses without recursion, and
    // the codec only looks at the levels it knows.
    std::string xml = "<ListBucketResult><Contents><Key>k</Key>";
    for (int i = 0; i < 200000; ++i) xml += "<a>";
    for (int i = 0; i < 200000; ++i) xml += "</a>";
    xml += "</Contents></ListBucketResult>";
    Result<ListObjectsPage> page = ParseListObjectsV2(xml);
    REQUIRE(page.ok());
    CHECK(page->objects.size() == 1);
  }

  TEST_CASE("ParseListObjectsV2 copes with huge text") {
    std::string key(8 << 20, 'k');
    Result<ListObjectsPage> page = ParseListObjectsV2("<ListBucketResult><Contents><Key>" + key +
                                                      "</Key></Contents></ListBucketResult>");
    REQUIRE(page.ok());
    CHECK(page->objects[0].key.size() == key.size());
    std::string huge_size(1 << 20, '9');
    CHECK_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>" + huge_size +
                                   "</Size></Contents></ListBucketResult>")
                    .ok());
  }

  ListObjectsV2Result SampleResult() {
    ListObjectsV2Result r;
    r.bucket = "bkt";
    r.prefix = "dir/";
    r.delimiter = "/";
    r.start_after = "dir/0";
    r.continuation_token = "tok-in";
    r.max_keys = 2;
    r.include_restore_status = true;
    ObjectInfo plain;
    plain.key = "dir/a & <b> \"q\" 'x'";
    plain.size = 42;
    plain.etag = "e1";
    plain.last_modified = Time("2023-05-06T07:08:09.000Z");
    ObjectInfo archived;
    archived.key = "dir/ctl\x01\x1f\t\r\n end";
    archived.size = 1ull << 40;
    archived.etag = "e2-3";
    archived.storage_class = "GLACIER";
    archived.last_modified = Time("2023-05-06T07:08:10.000Z");
    archived.restore = RestoreInfo{.ongoing = false, .expiry = Time("2030-01-01T00:00:00Z")};
    ObjectInfo restoring;
    restoring.key = " ";
    restoring.storage_class = "DEEP_ARCHIVE";
    restoring.restore = RestoreInfo{.ongoing = true};
    r.page.objects = {plain, archived, restoring};
    r.page.common_prefixes = {"dir/sub/", "dir/x&y/"};
    r.page.is_truncated = true;
    r.page.next_continuation_token = "next&tok";
    return r;
  }

  void CheckSamePage(const ListObjectsPage& got, const ListObjectsPage& want) {
    CHECK(got.is_truncated == want.is_truncated);
    CHECK(got.next_continuation_token == want.next_continuation_token);
    CHECK(got.common_prefixes == want.common_prefixes);
    REQUIRE(got.objects.size() == want.objects.size());
    for (size_t i = 0; i < got.objects.size(); ++i) {
      CAPTURE(i);
      CHECK(got.objects[i].key == want.objects[i].key);
      CHECK(got.objects[i].size == want.objects[i].size);
      CHECK(got.objects[i].etag == want.objects[i].etag);
      CHECK(got.objects[i].storage_class == want.objects[i].storage_class);
      CHECK(got.objects[i].last_modified == want.objects[i].last_modified);
      CHECK(got.objects[i].restore == want.objects[i].restore);
    }
  }

  TEST_CASE("EncodeListObjectsV2 round-trips, escaping keys") {
    ListObjectsV2Result r = SampleResult();
    std::string xml = EncodeListObjectsV2(r);
    CHECK(xml.find(R"(xmlns="http://s3.amazonaws.com/doc/2006-03-01/")") != std::string::npos);
    CHECK(xml.find("<Name>bkt</Name>") != std::string::npos);
    CHECK(xml.find("<Delimiter>/</Delimiter>") != std::string::npos);
    CHECK(xml.find("<MaxKeys>2</MaxKeys>") != std::string::npos);
    CHECK(xml.find("<KeyCount>5</KeyCount>") != std::string::npos);
    CHECK(xml.find("<StartAfter>dir/0</StartAfter>") != std::string::npos);
    CHECK(xml.find("<ContinuationToken>tok-in</ContinuationToken>") != std::string::npos);
    CHECK((xml.find("<ETag>&quot;e1&quot;</ETag>") != std::string::npos ||
           xml.find("<ETag>\"e1\"</ETag>") != std::string::npos));
    CHECK(xml.find("&amp;") != std::string::npos);
    CHECK(xml.find("<EncodingType>") == std::string::npos);
    Result<ListObjectsPage> page = ParseListObjectsV2(xml);
    REQUIRE(page.ok());
    CheckSamePage(*page, r.page);
  }

  TEST_CASE("EncodeListObjectsV2 with url encoding round-trips") {
    ListObjectsV2Result r = SampleResult();
    r.url_encode = true;
    r.page.objects[0].key = "dir/plus+space and%percent";
    std::string xml = EncodeListObjectsV2(r);
    CHECK(xml.find("<EncodingType>url</EncodingType>") != std::string::npos);
    CHECK(xml.find("dir/plus%2Bspace%20and%25percent") != std::string::npos);
    Result<ListObjectsPage> page = ParseListObjectsV2(xml);
    REQUIRE(page.ok());
    CheckSamePage(*page, r.page);
  }

  TEST_CASE("EncodeListObjectsV2 omits unset optional fields and restore status on request") {
    ListObjectsV2Result r;
    r.bucket = "b";
    ObjectInfo o;
    o.key = "k";
    o.restore = RestoreInfo{.ongoing = true};
    r.page.objects = {o};
    std::string xml = EncodeListObjectsV2(r);
    CHECK(xml.find("<Delimiter>") == std::string::npos);
    CHECK(xml.find("<StartAfter>") == std::string::npos);
    CHECK(xml.find("ContinuationToken") == std::string::npos);
    CHECK(xml.find("<RestoreStatus>") == std::string::npos);
    CHECK(xml.find("<IsTruncated>false</IsTruncated>") != std::string::npos);
    CHECK(xml.find("<StorageClass>STANDARD</StorageClass>") != std::string::npos);
  }

  TEST_CASE("ListBuckets round-trips and parses an AWS answer") {
    std::vector<BucketInfo> in = {{"alpha", Time("2020-01-01T00:00:00Z")},
                                  {"beta", Time("2021-02-03T04:05:06Z")}};
    std::string xml = EncodeListBuckets(in, "owner-1");
    CHECK(xml.find("<ID>owner-1</ID>") != std::string::npos);
    Result<std::vector<BucketInfo>> out = ParseListBuckets(xml);
    REQUIRE(out.ok());
    REQUIRE(out->size() == 2);
    CHECK((*out)[0].name == "alpha");
    CHECK((*out)[1].creation_date == in[1].creation_date);

    Result<std::vector<BucketInfo>> aws = ParseListBuckets(
        R"(<?xml version="1.0" encoding="UTF-8"?>)"
        R"(<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
        "<Owner><ID>bcaf1ffd86f461ca5fb16fd081034f</ID><DisplayName>webfile</DisplayName></Owner>"
        "<Buckets><Bucket><Name>quotes</Name><CreationDate>2006-02-03T16:45:09.000Z"
        "</CreationDate></Bucket><Bucket><Name>samples</Name>"
        "<CreationDate>2006-02-03T16:41:58.000Z</CreationDate></Bucket></Buckets>"
        "</ListAllMyBucketsResult>");
    REQUIRE(aws.ok());
    REQUIRE(aws->size() == 2);
    CHECK((*aws)[1].name == "samples");

    Result<std::vector<BucketInfo>> none = ParseListBuckets("<ListAllMyBucketsResult/>");
    REQUIRE(none.ok());
    CHECK(none->empty());

    CHECK_FALSE(ParseListBuckets("<ListAllMyBucketsResult><Buckets><Bucket><CreationDate>"
                                 "2006-02-03T16:41:58.000Z</CreationDate></Bucket></Buckets>"
                                 "</ListAllMyBucketsResult>")
                    .ok());
    CHECK_FALSE(ParseListBuckets("<ListAllMyBucketsResult><Buckets><Bucket><Name>x</Name>"
                                 "<CreationDate>bad</CreationDate></Bucket></Buckets>"
                                 "</ListAllMyBucketsResult>")
                    .ok());
    CHECK_FALSE(ParseListBuckets("<ListBucketResult/>").ok());
  }
  TEST_CASE("ListObjects v1 round-trips with Marker and NextMarker, url encoding included") {
    ListObjectsV1Result r;
    r.bucket = "bkt";
    r.prefix = "dir/";
    r.delimiter = "/";
    r.marker = "dir/a b";
    r.max_keys = 2;
    r.next_marker = "dir/sub+/";
    r.page = SampleResult().page;
    r.page.is_truncated = true;
    r.page.next_continuation_token = "ignored";
    std::string xml = EncodeListObjectsV1(r);
    CHECK(xml.find("<Marker>dir/a b</Marker>") != std::string::npos);
    CHECK(xml.find("<NextMarker>dir/sub+/</NextMarker>") != std::string::npos);
    CHECK(xml.find("ContinuationToken") == std::string::npos);
    CHECK(xml.find("<KeyCount>") == std::string::npos);
    Result<ListObjectsV1Page> page = ParseListObjectsV1(xml);
    REQUIRE(page.ok());
    CHECK(page->next_marker == "dir/sub+/");
    CHECK(page->page.next_continuation_token.empty());
    ListObjectsPage want = r.page;  // v1 carries neither a token nor restore status
    want.next_continuation_token.clear();
    for (ObjectInfo& o : want.objects) o.restore.reset();
    CheckSamePage(page->page, want);

    r.url_encode = true;
    xml = EncodeListObjectsV1(r);
    CHECK(xml.find("<Marker>dir/a%20b</Marker>") != std::string::npos);
    CHECK(xml.find("<NextMarker>dir/sub%2B/</NextMarker>") != std::string::npos);
    page = ParseListObjectsV1(xml);
    REQUIRE(page.ok());
    CHECK(page->next_marker == "dir/sub+/");

    r.url_encode = false;
    r.next_marker.clear();
    xml = EncodeListObjectsV1(r);
    CHECK(xml.find("NextMarker") == std::string::npos);
    page = ParseListObjectsV1(xml);
    REQUIRE(page.ok());
    CHECK(page->next_marker.empty());

    // An AWS answer.
    page = ParseListObjectsV1(
        R"(<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>)"
        R"(<Prefix></Prefix><Marker></Marker><NextMarker>p/</NextMarker><MaxKeys>1</MaxKeys>)"
        R"(<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><CommonPrefixes><Prefix>p/)"
        R"(</Prefix></CommonPrefixes></ListBucketResult>)");
    REQUIRE(page.ok());
    CHECK(page->page.is_truncated);
    CHECK(page->next_marker == "p/");
    CHECK(page->page.common_prefixes == std::vector<std::string>{"p/"});
    CHECK_FALSE(ParseListObjectsV1("<ListBucketResult><Contents/></ListBucketResult>").ok());
    CHECK_FALSE(ParseListObjectsV1("<ListAllMyBucketsResult/>").ok());
    CHECK_FALSE(ParseListObjectsV1("<ListBucketResult><EncodingType>url</EncodingType>"
                                   "<NextMarker>%zz</NextMarker></ListBucketResult>")
                    .ok());
  }
}

}  // namespace
}  // namespace reelfs::s3

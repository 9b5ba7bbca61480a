#include "s3/client/request_target.h"

#include <doctest/doctest.h>

using namespace reelfs;
using namespace reelfs::s3;

TEST_CASE("ParseEndpoint") {
  auto e = ParseEndpoint("http://127.0.0.1:9000");
  REQUIRE(e.ok());
  CHECK(e->scheme == "http");
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 9000);
  CHECK(e->base_path.empty());
  auto aws = ParseEndpoint("HTTPS://s3.eu-west-1.amazonaws.com/");
  REQUIRE(aws.ok());
  CHECK(aws->scheme == "https");
  CHECK(aws->port == 0);
  auto v6 = ParseEndpoint("http://[::1]:7070/gw");
  REQUIRE(v6.ok());
  CHECK(v6->host == "[::1]");
  CHECK(v6->port == 7070);
  CHECK(v6->base_path == "/gw");
  CHECK_FALSE(ParseEndpoint("127.0.0.1:9000").ok());
  CHECK_FALSE(ParseEndpoint("ftp://x").ok());
  CHECK_FALSE(ParseEndpoint("http://h:99999").ok());
  CHECK_FALSE(ParseEndpoint("http://:80").ok());
  CHECK_FALSE(ParseEndpoint("http://user:pw@h").ok());
}

TEST_CASE("path style") {
  auto e = *ParseEndpoint("http://127.0.0.1:9000");
  auto t = BuildRequestTarget(e, Addressing::kPath, "bucket", "dir/file.txt", {});
  CHECK(t.url == "http://127.0.0.1:9000/bucket/dir/file.txt");
  CHECK(t.host_header == "127.0.0.1:9000");
  CHECK(t.encoded_path == "/bucket/dir/file.txt");
  auto bucket_level = BuildRequestTarget(e, Addressing::kPath, "bucket", "",
                                         {{"list-type", "2"}, {"prefix", "a b/"}});
  CHECK(bucket_level.url == "http://127.0.0.1:9000/bucket?list-type=2&prefix=a%20b%2F");
  CHECK(bucket_level.raw_query == "list-type=2&prefix=a%20b%2F");
  auto service = BuildRequestTarget(e, Addressing::kPath, "", "", {});
  CHECK(service.url == "http://127.0.0.1:9000/");
  CHECK(service.encoded_path == "/");
}

TEST_CASE("virtual-host style") {
  auto e = *ParseEndpoint("https://s3.eu-west-1.amazonaws.com");
  auto t = BuildRequestTarget(e, Addressing::kVirtualHost, "bucket", "a/b", {});
  CHECK(t.url == "https://bucket.s3.eu-west-1.amazonaws.com/a/b");
  CHECK(t.host_header == "bucket.s3.eu-west-1.amazonaws.com");
  CHECK(t.encoded_path == "/a/b");
  auto bucket_level = BuildRequestTarget(e, Addressing::kVirtualHost, "bucket", "", {});
  CHECK(bucket_level.encoded_path == "/");
  auto service = BuildRequestTarget(e, Addressing::kVirtualHost, "", "", {});
  CHECK(service.host_header == "s3.eu-west-1.amazonaws.com");
  auto with_port = BuildRequestTarget(*ParseEndpoint("http://localhost:7070"),
                                      Addressing::kVirtualHost, "b", "k", {});
  CHECK(with_port.host_header == "b.localhost:7070");
  // Default ports are left out of Host (it must match what curl would send and what is signed).
  auto port80 = BuildRequestTarget(*ParseEndpoint("http://h:80"), Addressing::kPath, "b", "k", {});
  CHECK(port80.host_header == "h");
}

TEST_CASE("key encoding: every byte outside the unreserved set, slash kept") {
  auto e = *ParseEndpoint("http://h:1");
  auto path = [&](std::string_view key) {
    return BuildRequestTarget(e, Addressing::kPath, "b", key, {}).encoded_path;
  };
  CHECK(path("a b") == "/b/a%20b");
  CHECK(path("a+b") == "/b/a%2Bb");
  CHECK(path("a~b-c_d.e") == "/b/a~b-c_d.e");
  CHECK(path("dir/sub/") == "/b/dir/sub/");
  CHECK(path("what?x=1") == "/b/what%3Fx%3D1");
  CHECK(path("frag#1") == "/b/frag%231");
  CHECK(path("100%") == "/b/100%25");
  CHECK(path("caf\xc3\xa9") == "/b/caf%C3%A9");           // UTF-8 é
  CHECK(path("\xe6\x97\xa5.txt") == "/b/%E6%97%A5.txt");  // 日
  CHECK(path("./../x") == "/b/./../x");                   // sent as is (CURLOPT_PATH_AS_IS)
}

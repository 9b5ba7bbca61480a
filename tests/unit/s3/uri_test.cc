#include "s3/protocol/uri.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

TEST_SUITE("s3") {
  TEST_CASE("uri: UriEncode keeps exactly the RFC 3986 unreserved set") {
    const std::string unreserved =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    CHECK(UriEncode(unreserved, false) == unreserved);
    CHECK(UriEncode("a b", false) == "a%20b");
    CHECK(UriEncode("a+b=c&d", false) == "a%2Bb%3Dc%26d");
    CHECK(UriEncode("a/b", false) == "a%2Fb");
    CHECK(UriEncode("a/b", true) == "a/b");
    CHECK(UriEncode("$@:*!'()", true) == "%24%40%3A%2A%21%27%28%29");
    CHECK(UriEncode("\xe1\x88\xb4", false) == "%E1%88%B4");  // uppercase hex, per byte
    CHECK(UriEncode(std::string_view("\0", 1), false) == "%00");
    CHECK(UriEncode("%", false) == "%25");
    CHECK(UriEncode("", true) == "");
  }

  TEST_CASE("uri: UriDecode") {
    CHECK(*UriDecode("a%20b") == "a b");
    CHECK(*UriDecode("%e1%88%B4") == "\xe1\x88\xb4");
    CHECK(*UriDecode("a+b") == "a+b");  // '+' is not a space in S3 paths
    CHECK(*UriDecode("%2F") == "/");
    CHECK(*UriDecode("%00") == std::string(1, '\0'));  // decoded; callers validate keys
    CHECK(*UriDecode("") == "");
    for (const char* bad : {"%G1", "%4", "%", "a%", "%%", "%1G", "abc%2"}) {
      CAPTURE(bad);
      Result<std::string> r = UriDecode(bad);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("uri: ParseQuery") {
    Result<QueryParams> q = ParseQuery("a=b&c&d=&e=x%3Dy+z");
    REQUIRE(q.ok());
    const QueryParams want = {{"a", "b"}, {"c", ""}, {"d", ""}, {"e", "x=y+z"}};
    CHECK(*q == want);
    CHECK(ParseQuery("")->empty());
    CHECK(ParseQuery("&&")->empty());
    const QueryParams repeated = {{"k", "2"}, {"k", "1"}, {"x", "a=b"}};
    CHECK(*ParseQuery("k=2&k=1&x=a=b") == repeated);  // order kept; only the first '=' splits
    CHECK(*ParseQuery("%E1%88%B4=bar") == QueryParams{{"\xe1\x88\xb4", "bar"}});
    CHECK(ParseQuery("a=%ZZ").status().code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(ParseQuery("%4=1").ok());
  }

  TEST_CASE("uri: CanonicalQueryString sorts encoded names, then values") {
    CHECK(CanonicalQueryString({}) == "");
    CHECK(CanonicalQueryString({{"prefix", "J"}, {"max-keys", "2"}}) == "max-keys=2&prefix=J");
    CHECK(CanonicalQueryString({{"Param1", "value2"}, {"Param1", "Value1"}}) ==
          "Param1=Value1&Param1=value2");
    CHECK(CanonicalQueryString({{"uploads", ""}}) == "uploads=");
    CHECK(CanonicalQueryString({{"prefix", "a b/c+d"}}) == "prefix=a%20b%2Fc%2Bd");
    // Sorted by encoded bytes: '%' (0x25) sorts before letters.
    CHECK(CanonicalQueryString({{"Param", "Value2"}, {"\xe1\x88\xb4", "Value1"}}) ==
          "%E1%88%B4=Value1&Param=Value2");
  }
}

}  // namespace
}  // namespace reelfs::s3

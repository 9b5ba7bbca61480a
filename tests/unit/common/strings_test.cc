// common/strings: ASCII case folding (bytes past 0x7f untouched), trimming, unquoting.
#include "common/strings.h"

#include <doctest/doctest.h>

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("strings: ASCII case") {
    CHECK(Lower("Content-MD5") == "content-md5");
    CHECK(Lower("\xc3\x89T\xc3\xa9") == "\xc3\x89t\xc3\xa9");  // UTF-8 bytes stay as they are
    CHECK(EqualsIgnoreCase("GLACIER", "glacier"));
    CHECK(EqualsIgnoreCase("", ""));
    CHECK_FALSE(EqualsIgnoreCase("glacier", "glacie"));
    CHECK_FALSE(EqualsIgnoreCase("\xc3\x89", "\xc3\xa9"));
    CHECK(StartsWithIgnoreCase("Bytes=0-1", "bytes"));
    CHECK_FALSE(StartsWithIgnoreCase("byte", "bytes"));
  }

  TEST_CASE("strings: trimming") {
    CHECK(Trim(" \t v a \t ") == "v a");
    CHECK(Trim("\r\nv\r\n") == "\r\nv\r\n");  // OWS is space and tab only
    CHECK(Trim("\r\n v \r\n", kWhitespace) == "v");
    CHECK(Trim(" \t ").empty());
    CHECK(Trim("").empty());
    CHECK(IsOws('\t'));
    CHECK_FALSE(IsOws('\n'));
    CHECK(IsWhitespace('\n'));
  }

  TEST_CASE("strings: unquoting") {
    CHECK(Unquote("\"abc\"") == "abc");
    CHECK(Unquote("\"\"").empty());
    CHECK(Unquote("abc") == "abc");
    CHECK(Unquote("\"") == "\"");
    CHECK(Unquote("\"abc") == "\"abc");
  }
}

}  // namespace
}  // namespace reelfs

// common/json: escaping, member order, bytes that are not UTF-8, and numbers JSON cannot write.
#include "common/json.h"

#include <limits>

#include <doctest/doctest.h>

namespace reelfs {
namespace {

TEST_SUITE("common") {
  TEST_CASE("json: strings are escaped, members keep their order") {
    CHECK(DumpJson(Json("a\"b\\c\n")) == R"("a\"b\\c\n")");
    CHECK(DumpJson(Json(std::string("\x01\x1f", 2))) == R"("\u0001\u001f")");
    CHECK(DumpJson(Json("caf\xc3\xa9")) == "\"caf\xc3\xa9\"");  // UTF-8 stays as it is
    Json doc;
    doc["z"] = 1;
    doc["a"] = Json::array({true, nullptr});
    CHECK(DumpJson(doc) == R"({"z":1,"a":[true,null]})");
  }

  TEST_CASE("json: bytes that are not UTF-8 become U+FFFD, never an exception") {
    std::string dumped;
    CHECK_NOTHROW(dumped = DumpJson(Json{{std::string("k\xff"), std::string("v\xc3")}}));
    CHECK(dumped == "{\"k\xef\xbf\xbd\":\"v\xef\xbf\xbd\"}");
  }

  TEST_CASE("json: numbers") {
    CHECK(DumpJson(JsonNumber(1.5)) == "1.5");
    CHECK(DumpJson(JsonNumber(std::numeric_limits<double>::infinity())) == "0");
    CHECK(DumpJson(JsonNumber(std::numeric_limits<double>::quiet_NaN())) == "0");
    CHECK(DumpJson(Json(uint64_t{18446744073709551615u})) == "18446744073709551615");
  }
}

}  // namespace
}  // namespace reelfs

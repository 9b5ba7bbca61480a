#include "gateway/store/key_validation.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::gateway {
namespace {

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

struct KeyCase {
  std::string key;
  const char* code;  // nullptr: valid
};

TEST_CASE("object keys: hostile inputs are rejected with the right S3 code") {
  const KeyCase cases[] = {
      {"a", nullptr},
      {"a/b/c.txt", nullptr},
      {"dir/", nullptr},
      {"a/b/", nullptr},
      {"x..y/..z", nullptr},
      {".hidden", nullptr},
      {"a/.reelfs-gateway", nullptr},
      {"\xc3\xa9t\xc3\xa9/\xe2\x82\xac", nullptr},
      {Repeat(std::string(255, 'k') + "/", 4), nullptr},  // 1024 bytes
      {"", "InvalidArgument"},
      {"..", "InvalidArgument"},
      {".", "InvalidArgument"},
      {"../x", "InvalidArgument"},
      {"a/../../etc/passwd", "InvalidArgument"},
      {"a/./b", "InvalidArgument"},
      {"a/..", "InvalidArgument"},
      {"a/../", "InvalidArgument"},
      {"/abs", "InvalidArgument"},
      {"a//b", "InvalidArgument"},
      {"a//", "InvalidArgument"},
      {"/", "InvalidArgument"},
      {std::string("nul\0key", 7), "InvalidArgument"},
      {"tab\tkey", "InvalidArgument"},
      {"new\nline", "InvalidArgument"},
      {"del\x7f", "InvalidArgument"},
      {"\xff\xfe", "InvalidArgument"},
      {"\xc0\xaf", "InvalidArgument"},      // overlong '/'
      {"\xed\xa0\x80", "InvalidArgument"},  // surrogate
      {"\xe2\x82", "InvalidArgument"},      // truncated
      {".reelfs-gateway/credentials", "InvalidArgument"},
      {".reelfs-gateway", "InvalidArgument"},
      {".reelfs-gateway/", "InvalidArgument"},
      {std::string(1025, 'k'), "KeyTooLongError"},
      {"a/" + std::string(256, 'c'), "KeyTooLongError"},
  };
  for (const KeyCase& c : cases) {
    CAPTURE(c.key);
    Status st = ValidateObjectKey(c.key);
    if (c.code == nullptr) {
      CHECK(st.ok());
    } else {
      CHECK_FALSE(st.ok());
      CHECK(st.detail().s3_code == c.code);
      CHECK(st.detail().http_status == 400);
    }
  }
}

TEST_CASE("bucket names follow the S3 rules") {
  for (const char* ok : {"abc", "my-bucket", "a.b.c", "0bucket9",
                         "x23456789012345678901234567890"
                         "123456789012345678901234567890"
                         "123"}) {
    CAPTURE(ok);
    CHECK(ValidateBucketName(ok).ok());
  }
  for (const char* bad : {"ab", "Upper", "under_score", "-lead", "trail-", "a..b", "a.-b", "a-.b",
                          "192.168.1.1", ".reelfs-gateway", "a/b", ""}) {
    CAPTURE(bad);
    Status st = ValidateBucketName(bad);
    CHECK_FALSE(st.ok());
    CHECK(st.detail().s3_code == "InvalidBucketName");
  }
  CHECK_FALSE(ValidateBucketName(std::string(64, 'a')).ok());
}

TEST_CASE("SplitKey and markers") {
  CHECK(SplitKey("a/b/c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(SplitKey("a/b/") == std::vector<std::string>{"a", "b"});
  CHECK(IsDirectoryMarker("a/"));
  CHECK_FALSE(IsDirectoryMarker("a"));
}

}  // namespace
}  // namespace reelfs::gateway

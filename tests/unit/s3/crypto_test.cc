#include "s3/protocol/crypto.h"

#include <string>
#include <utility>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

TEST_SUITE("s3") {
  TEST_CASE("crypto: SHA-256 known answers (FIPS 180-2)") {
    CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(Sha256("abc").size() == 32);
  }

  TEST_CASE("crypto: MD5 known answers (RFC 1321)") {
    CHECK(Md5Hex("") == "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(Md5Hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
    CHECK(Md5Hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
    // Content-MD5 is the base64 of the raw digest.
    CHECK(Base64Encode(Md5("")) == "1B2M2Y8AsgTpgAmY7PhCfg==");
  }

  TEST_CASE("crypto: HMAC-SHA256 (RFC 4231 test cases 1 and 2)") {
    CHECK(HexEncode(HmacSha256(std::string(20, '\x0b'), "Hi There")) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Keys longer than the block size are hashed first (RFC 4231 test case 6).
    CHECK(HexEncode(HmacSha256(std::string(131, '\xaa'),
                               "Test Using Larger Than Block-Size Key - Hash Key First")) ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CHECK(HmacSha256("", "").size() == 32);
  }

  TEST_CASE("crypto: hex and base64 encodings (RFC 4648 vectors)") {
    CHECK(HexEncode(std::string_view("\x00\x7f\x80\xff", 4)) == "007f80ff");
    CHECK(HexEncode(std::string_view()) == "");
    CHECK(Base64Encode("") == "");
    CHECK(Base64Encode("f") == "Zg==");
    CHECK(Base64Encode("fo") == "Zm8=");
    CHECK(Base64Encode("foo") == "Zm9v");
    CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  }

  TEST_CASE("crypto: Digest streams to the same result as the one-shot hash") {
    Digest sha(Digest::Algorithm::kSha256);
    sha.Update("a");
    sha.Update("");
    sha.Update(std::as_bytes(std::span<const char>("bc", 2)));
    CHECK(HexEncode(sha.Finish()) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha.Finish().empty());  // finished: no second digest

    Digest md5(Digest::Algorithm::kMd5);
    Digest moved = std::move(md5);
    moved.Update("message ");
    moved.Update("digest");
    CHECK(HexEncode(moved.Finish()) == "f96b697d7cb7938d525a2f31aaf161d0");

    Digest empty(Digest::Algorithm::kMd5);
    CHECK(HexEncode(empty.Finish()) == "d41d8cd98f00b204e9800998ecf8427e");
  }

  TEST_CASE("crypto: ConstantTimeEquals") {
    CHECK(ConstantTimeEquals("", ""));
    CHECK(ConstantTimeEquals("abc", "abc"));
    CHECK_FALSE(ConstantTimeEquals("abc", "abd"));
    CHECK_FALSE(ConstantTimeEquals("abc", "ab"));
    CHECK_FALSE(ConstantTimeEquals("", "a"));
  }
}

}  // namespace
}  // namespace reelfs::s3

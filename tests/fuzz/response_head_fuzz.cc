// The head of a ranged GET's answer as the receivers beside libcurl take it from a server
// (s3/client/response_head.h). The first 16 bytes are the range asked for (offset, length;
// little-endian), the rest the head. Properties: a parsed head has a three-digit status and
// lowercase names; an answer the check accepts describes a non-empty body within the range
// asked for, starting at its offset, and a parsed head re-parses from its own text.
#include <cstring>

#include "s3/client/response_head.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  ByteRange range{0, 1};
  if (size >= 16) {
    std::memcpy(&range.offset, data, 8);
    std::memcpy(&range.length, data + 8, 8);
    data += 16;
    size -= 16;
  }
  auto head = ParseResponseHead(reelfs::fuzz::AsView(data, size));
  if (!head.ok()) return 0;
  REELFS_FUZZ_CHECK(head->status >= 0 && head->status <= 999);
  std::string text = "HTTP/1.1 " + std::to_string(1000 + head->status).substr(1) + " R\r\n";
  for (const auto& [name, value] : head->headers) {
    REELFS_FUZZ_CHECK(!name.empty());
    for (char c : name) REELFS_FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
    text += name + ": " + value + "\r\n";
  }
  text += "\r\n";
  auto again = ParseResponseHead(text);
  REELFS_FUZZ_CHECK(again.ok() && again->status == head->status && again->headers == head->headers);
  for (const std::string if_match : {"", "\"etag1\""}) {
    auto answer = CheckRangedAnswer(*head, range, if_match, "fuzz");
    if (!answer.ok()) continue;
    REELFS_FUZZ_CHECK(head->status == 206);
    REELFS_FUZZ_CHECK(answer->length > 0 && answer->length <= range.length);
    REELFS_FUZZ_CHECK(answer->object_size == 0 ||
                      answer->length <= answer->object_size - range.offset);
  }
  return 0;
}

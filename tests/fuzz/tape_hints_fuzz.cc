// Tape hints (docs/protocols/tape-hints.md), both carriers: the x-reelfs-tape-* headers of a HEAD
// or GET (s3/client/object_headers.h) and the <ReelfsTape> element of a listing entry
// (s3/protocol/list_codec.h), each read back by hsm::TapeHintOf and hsm::Classify. First byte
// even: the rest is header lines; odd: the rest is the inside of one <Contents>.
#include "hsm/state.h"
#include "s3/client/object_headers.h"
#include "s3/protocol/list_codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void Check(const reelfs::s3::ObjectInfo& info) {
  auto hint = reelfs::hsm::TapeHintOf(info);
  if (hint.has_value()) REELFS_FUZZ_CHECK(!hint->cartridge.empty());
  (void)reelfs::hsm::Classify(info, {}, reelfs::s3::WallTime{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in = reelfs::fuzz::AsView(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    Check(reelfs::s3::ObjectInfoFromHeaders(reelfs::fuzz::SplitHeaders(in, true), "k"));
    return 0;
  }
  std::string xml = "<ListBucketResult><Contents>";
  xml.append(in);
  xml += "</Contents></ListBucketResult>";
  auto page = reelfs::s3::ParseListObjectsV2(xml);
  if (!page.ok()) return 0;
  for (const auto& info : page->objects) Check(info);
  return 0;
}

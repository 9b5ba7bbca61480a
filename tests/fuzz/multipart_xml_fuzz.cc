// Multipart upload codecs (s3/protocol/request_codecs.h, upload_list_codec.h):
// InitiateMultipartUploadResult, CompleteMultipartUpload (what the gateway parses from clients),
// CompleteMultipartUploadResult (which may carry an <Error> inside a 200), and the listings
// ListMultipartUploadsResult and ListPartsResult (what the mount's stale-upload sweep parses).
// Every parser sees the same bytes; a parsed listing re-encodes and parses back to the same
// entries, and a truncated one always says where the next page starts.
#include "s3/protocol/request_codecs.h"
#include "s3/protocol/upload_list_codec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reelfs::s3;  // NOLINT(google-build-using-namespace)
  std::string_view in = reelfs::fuzz::AsView(data, size);
  (void)ParseInitiateMultipartUploadResult(in);
  (void)ParseCompleteMultipartUploadResult(in);
  if (auto uploads = ParseListMultipartUploadsResult(in); uploads.ok()) {
    REELFS_FUZZ_CHECK(!uploads->page.is_truncated || !uploads->page.next_key_marker.empty());
    for (const MultipartUploadInfo& u : uploads->page.uploads) {
      REELFS_FUZZ_CHECK(!u.upload_id.empty());
    }
    // Keys with NUL cannot travel in XML unless url-encoded: re-encode with url encoding.
    ListMultipartUploadsResult again = *uploads;
    again.url_encode = true;
    auto back = ParseListMultipartUploadsResult(EncodeListMultipartUploadsResult(again));
    REELFS_FUZZ_CHECK(back.ok());
    REELFS_FUZZ_CHECK(back->page.uploads.size() == uploads->page.uploads.size());
    for (size_t i = 0; i < back->page.uploads.size(); ++i) {
      REELFS_FUZZ_CHECK(back->page.uploads[i].key == uploads->page.uploads[i].key);
    }
  }
  if (auto parts = ParseListPartsResult(in); parts.ok()) {
    REELFS_FUZZ_CHECK(!parts->page.is_truncated ||
                      parts->page.next_part_number_marker > parts->part_number_marker);
    for (const PartInfo& p : parts->page.parts) {
      REELFS_FUZZ_CHECK(p.part_number >= 1 && p.part_number <= 10000);
    }
    auto back = ParseListPartsResult(EncodeListPartsResult(*parts));
    REELFS_FUZZ_CHECK(back.ok());
    REELFS_FUZZ_CHECK(back->page.parts.size() == parts->page.parts.size());
  }
  auto parts = ParseCompleteMultipartUpload(in);
  if (!parts.ok()) return 0;
  for (const CompletedPart& part : *parts) REELFS_FUZZ_CHECK(part.part_number > 0);
  return 0;
}

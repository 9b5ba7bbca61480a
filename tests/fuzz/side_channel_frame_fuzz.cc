// Side-channel frames (api/protocol/codec.h), read as a server reads its socket: DecodeNext over
// the input, frame after frame, until the input ends or the framing breaks. Properties: a frame
// that decodes re-encodes to exactly its own bytes; a malformed request still reports a frame
// size inside the input (the stream stays in step); DecodeFrame over the whole input agrees with
// the stream view.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "api/protocol/codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace reelfs::api::protocol;  // NOLINT(google-build-using-namespace)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  std::span<const uint8_t> rest = input;
  size_t frames = 0;
  bool clean = true;  // every frame so far decoded, and the input ended on a frame boundary
  while (true) {
    auto step = DecodeNext(rest);
    if (!step.ok()) {
      clean = false;
      break;
    }
    if (step->need_more > 0) {
      REELFS_FUZZ_CHECK(step->frame_size == 0);
      clean = clean && rest.empty();
      break;
    }
    REELFS_FUZZ_CHECK(step->frame_size >= kFrameHeaderSize && step->frame_size <= rest.size());
    REELFS_FUZZ_CHECK(step->frame_size == kFrameHeaderSize + step->header.length);
    REELFS_FUZZ_CHECK(step->frame.has_value() == step->body_status.ok());
    if (step->frame.has_value()) {
      auto again = EncodeFrame(*step->frame);
      if (!again.ok()) {
        std::fprintf(stderr, "%s\n", again.status().ToString().c_str());
        reelfs::fuzz::Violated("what decodes re-encodes");
      }
      auto own = rest.first(step->frame_size);
      REELFS_FUZZ_CHECK(again->size() == own.size() &&
                        std::equal(again->begin(), again->end(), own.begin()));
    } else {
      clean = false;
    }
    rest = rest.subspan(step->frame_size);
    ++frames;
    if (rest.empty()) break;
  }
  auto whole = DecodeFrame(input);
  REELFS_FUZZ_CHECK(whole.ok() == (clean && frames == 1));
  return 0;
}

// Encode and decode side-channel frames (docs/protocols/side-channel.md section 5), whole or from
// a byte stream. Every malformed input is kInvalidArgument with a message naming the rule:
//
//   - stream-level (DecodeNext's error; the connection cannot continue): body length above
//     4 KiB, unknown type;
//   - request-level (StreamStep::body_status; the frame's bytes are known, so the daemon can
//     answer its tag and go on): unknown flag bits, a body shorter or longer than its type's
//     layout, an unknown buffer kind or DONE path, a READ of length 0 or above 64 MiB, or whose
//     offset + length or buffer_offset + length overflows u64, an ERROR text that is not as long
//     as it says.
//
// The encoder checks the same rules, so what encodes decodes, and what decodes re-encodes to the
// same bytes.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "api/protocol/frame_header.h"
#include "api/protocol/messages.h"
#include "common/result.h"

namespace reelfs::api::protocol {

// Header and body; kInvalidArgument where the message breaks a rule above.
Result<std::vector<uint8_t>> EncodeFrame(const Frame& frame);

// What the front of a stream holds.
struct StreamStep {
  // > 0: not a whole frame yet; read at least this many more bytes and call again.
  size_t need_more = 0;
  // > 0 (when need_more is 0): a whole frame of this many bytes is at the front; consume them.
  size_t frame_size = 0;
  FrameHeader header;  // of that frame, when frame_size > 0
  // OK: `frame` holds the message. Else the request is malformed (kInvalidArgument) but the
  // stream stays in step: answer header.tag and continue after frame_size bytes.
  Status body_status;
  std::optional<Frame> frame;
};

// Looks at the front of `bytes` only; the rest may hold further frames. kInvalidArgument when
// the header breaks the framing (the stream cannot be resynchronised).
Result<StreamStep> DecodeNext(std::span<const uint8_t> bytes);

// Exactly one frame, nothing after it: any error above, a truncated frame or trailing bytes are
// kInvalidArgument.
Result<Frame> DecodeFrame(std::span<const uint8_t> bytes);

}  // namespace reelfs::api::protocol

// The side channel's frame header (docs/protocols/side-channel.md section 5): 16 bytes,
// little-endian, in front of every message body.
//
//   u32 length   // of the body, at most kMaxBodyLength
//   u16 type     // MessageType
//   u16 flags    // no flag is defined yet: any bit set is an unknown bit
//   u64 tag      // chosen by the client, echoed in the answer
//
// DecodeFrameHeader checks only what breaks the framing itself (the length bound, the type);
// flags and the body are checked by the codec (codec.h), because a bad body costs one request
// while a bad frame costs the connection (section 6).
//
// Thread-safety: value types and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/result.h"

namespace reelfs::api::protocol {

inline constexpr size_t kFrameHeaderSize = 16;
// A request names ids and offsets, never data, so 4 KiB is generous; it bounds what one client
// can make the daemon buffer before a frame is complete.
inline constexpr uint32_t kMaxBodyLength = 4096;
// No flag is defined in version 1; a bit outside this mask is refused.
inline constexpr uint16_t kKnownFlags = 0;

// Wire values; 0 is never a type, so a zeroed header does not decode.
enum class MessageType : uint16_t {
  kHello = 1,
  kOpenFile = 2,
  kCloseFile = 3,
  kRegisterBuffer = 4,
  kReleaseBuffer = 5,
  kRead = 6,
  kDone = 7,
  kError = 8,
  kOpenPath = 9,   // offered by the HELLO capability kOpenPath
  kReadPath = 10,  // likewise
};

// For messages and logs: "HELLO", "READ", ...; "UNKNOWN" outside the enum.
std::string_view MessageTypeName(MessageType type);
bool IsKnownMessageType(uint16_t type);

struct FrameHeader {
  uint32_t length = 0;  // body bytes after the header
  MessageType type = MessageType::kHello;
  uint16_t flags = 0;
  uint64_t tag = 0;
};

std::array<uint8_t, kFrameHeaderSize> EncodeFrameHeader(const FrameHeader& header);

// `bytes` must hold at least kFrameHeaderSize bytes (only those are read). kInvalidArgument for a
// body length above kMaxBodyLength or an unknown type; flags are returned as read.
Result<FrameHeader> DecodeFrameHeader(std::span<const uint8_t> bytes);

}  // namespace reelfs::api::protocol

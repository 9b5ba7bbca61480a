#include "api/protocol/frame_header.h"

#include <fmt/format.h>

#include "api/protocol/byte_io_internal.h"

namespace reelfs::api::protocol {

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "HELLO";
    case MessageType::kOpenFile:
      return "OPEN_FILE";
    case MessageType::kCloseFile:
      return "CLOSE_FILE";
    case MessageType::kRegisterBuffer:
      return "REGISTER_BUFFER";
    case MessageType::kReleaseBuffer:
      return "RELEASE_BUFFER";
    case MessageType::kRead:
      return "READ";
    case MessageType::kDone:
      return "DONE";
    case MessageType::kError:
      return "ERROR";
    case MessageType::kOpenPath:
      return "OPEN_PATH";
    case MessageType::kReadPath:
      return "READ_PATH";
  }
  return "UNKNOWN";
}

bool IsKnownMessageType(uint16_t type) {
  return type >= static_cast<uint16_t>(MessageType::kHello) &&
         type <= static_cast<uint16_t>(MessageType::kReadPath);
}

std::array<uint8_t, kFrameHeaderSize> EncodeFrameHeader(const FrameHeader& header) {
  std::array<uint8_t, kFrameHeaderSize> out{};
  internal::StoreLe(out.data(), header.length);
  internal::StoreLe(out.data() + 4, static_cast<uint16_t>(header.type));
  internal::StoreLe(out.data() + 6, header.flags);
  internal::StoreLe(out.data() + 8, header.tag);
  return out;
}

Result<FrameHeader> DecodeFrameHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kFrameHeaderSize) {
    return Status::InvalidArgument(fmt::format("side channel: frame header needs {} bytes, have {}",
                                               kFrameHeaderSize, bytes.size()));
  }
  FrameHeader header;
  header.length = internal::LoadLe<uint32_t>(bytes.data());
  uint16_t type = internal::LoadLe<uint16_t>(bytes.data() + 4);
  header.flags = internal::LoadLe<uint16_t>(bytes.data() + 6);
  header.tag = internal::LoadLe<uint64_t>(bytes.data() + 8);
  if (header.length > kMaxBodyLength) {
    return Status::InvalidArgument(
        fmt::format("side channel: body length {} is above the limit of {} bytes", header.length,
                    kMaxBodyLength));
  }
  if (!IsKnownMessageType(type)) {
    return Status::InvalidArgument(fmt::format("side channel: unknown message type {}", type));
  }
  header.type = static_cast<MessageType>(type);
  return header;
}

}  // namespace reelfs::api::protocol

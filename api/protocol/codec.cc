#include "api/protocol/codec.h"

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "api/protocol/byte_io_internal.h"

namespace reelfs::api::protocol {
namespace {

static_assert(kMaxErrorMessage + 6 == kMaxBodyLength, "ERROR's text fills the body limit");

using internal::AppendLe;
using internal::BodyReader;

Status Invalid(MessageType type, std::string_view what) {
  return Status::InvalidArgument(fmt::format("side channel: {}: {}", MessageTypeName(type), what));
}

bool AddOverflows(uint64_t a, uint64_t b) { return a > std::numeric_limits<uint64_t>::max() - b; }

// The rules a message's values obey, shared by encoder and decoder so each accepts exactly what
// the other produces.
Status CheckValues(const Hello&) { return Status::Ok(); }
Status CheckValues(const OpenFile&) { return Status::Ok(); }
Status CheckValues(const CloseFile&) { return Status::Ok(); }
Status CheckValues(const ReleaseBuffer&) { return Status::Ok(); }

Status CheckValues(const RegisterBuffer& m) {
  switch (m.kind) {
    case BufferKind::kMemfd:
    case BufferKind::kDmaBuf:
      for (uint8_t b : m.cuda_ipc_handle) {
        if (b != 0) return Invalid(MessageType::kRegisterBuffer, "a handle is only for cuda_ipc");
      }
      return Status::Ok();
    case BufferKind::kCudaIpc:
      return Status::Ok();
  }
  return Invalid(MessageType::kRegisterBuffer,
                 fmt::format("unknown buffer kind {}", static_cast<unsigned>(m.kind)));
}

// READ's range rules, shared with READ_PATH.
Status CheckRange(MessageType type, uint64_t offset, uint64_t length, uint64_t buffer_offset) {
  if (length == 0) return Invalid(type, "length is 0");
  if (length > kMaxReadLength) {
    return Invalid(type, fmt::format("length {} is above the cap of {}", length, kMaxReadLength));
  }
  if (AddOverflows(offset, length)) return Invalid(type, "offset + length overflows u64");
  if (AddOverflows(buffer_offset, length)) {
    return Invalid(type, "buffer_offset + length overflows u64");
  }
  return Status::Ok();
}

// OPEN_PATH's path rules, shared with READ_PATH.
Status CheckPath(MessageType type, const std::string& path, size_t max) {
  if (path.empty()) return Invalid(type, "empty path");
  if (path.size() > max) {
    return Invalid(type, fmt::format("path of {} bytes is above {}", path.size(), max));
  }
  if (path.find('\0') != std::string::npos) return Invalid(type, "NUL byte in the path");
  return Status::Ok();
}

Status CheckValues(const Read& m) {
  return CheckRange(MessageType::kRead, m.offset, m.length, m.buffer_offset);
}

Status CheckValues(const Done& m) {
  switch (m.path) {
    case DonePath::kNone:
    case DonePath::kRdma:
    case DonePath::kHttp:
    case DonePath::kCache:
      return Status::Ok();
  }
  return Invalid(MessageType::kDone, fmt::format("unknown path {}", static_cast<unsigned>(m.path)));
}

Status CheckValues(const Error& m) {
  if (m.message.size() > kMaxErrorMessage) {
    return Invalid(MessageType::kError, fmt::format("message of {} bytes is above {}",
                                                    m.message.size(), kMaxErrorMessage));
  }
  return Status::Ok();
}

Status CheckValues(const OpenPath& m) {
  return CheckPath(MessageType::kOpenPath, m.path, kMaxOpenPath);
}

Status CheckValues(const ReadPath& m) {
  REELFS_RETURN_IF_ERROR(CheckRange(MessageType::kReadPath, m.offset, m.length, m.buffer_offset));
  return CheckPath(MessageType::kReadPath, m.path, kMaxReadPath);
}

// Body layouts (docs/protocols/side-channel.md section 5); all fields little-endian.
void AppendBody(const Hello& m, std::vector<uint8_t>* out) {
  AppendLe(out, m.version);
  AppendLe(out, m.capabilities);
}
void AppendBody(const OpenFile&, std::vector<uint8_t>*) {}
void AppendBody(const CloseFile& m, std::vector<uint8_t>* out) { AppendLe(out, m.file_id); }
void AppendBody(const RegisterBuffer& m, std::vector<uint8_t>* out) {
  AppendLe(out, static_cast<uint8_t>(m.kind));
  AppendLe(out, m.length);
  if (m.kind == BufferKind::kCudaIpc) {
    out->insert(out->end(), m.cuda_ipc_handle.begin(), m.cuda_ipc_handle.end());
  }
}
void AppendBody(const ReleaseBuffer& m, std::vector<uint8_t>* out) { AppendLe(out, m.buffer_id); }
void AppendBody(const Read& m, std::vector<uint8_t>* out) {
  AppendLe(out, m.file_id);
  AppendLe(out, m.offset);
  AppendLe(out, m.length);
  AppendLe(out, m.buffer_id);
  AppendLe(out, m.buffer_offset);
}
void AppendBody(const Done& m, std::vector<uint8_t>* out) {
  AppendLe(out, static_cast<uint64_t>(m.result));
  AppendLe(out, static_cast<uint8_t>(m.path));
}
void AppendBody(const Error& m, std::vector<uint8_t>* out) {
  AppendLe(out, m.error);
  AppendLe(out, static_cast<uint16_t>(m.message.size()));
  out->insert(out->end(), m.message.begin(), m.message.end());
}
void AppendBody(const OpenPath& m, std::vector<uint8_t>* out) {
  AppendLe(out, static_cast<uint16_t>(m.path.size()));
  out->insert(out->end(), m.path.begin(), m.path.end());
}
void AppendBody(const ReadPath& m, std::vector<uint8_t>* out) {
  AppendLe(out, m.offset);
  AppendLe(out, m.length);
  AppendLe(out, m.buffer_id);
  AppendLe(out, m.buffer_offset);
  AppendLe(out, static_cast<uint16_t>(m.path.size()));
  out->insert(out->end(), m.path.begin(), m.path.end());
}

// Reads the fields of one message; the caller checks truncation and trailing bytes.
Message ReadBody(MessageType type, BodyReader& r) {
  switch (type) {
    case MessageType::kHello: {
      Hello m;
      m.version = r.Take<uint32_t>();
      m.capabilities = r.Take<uint32_t>();
      return m;
    }
    case MessageType::kOpenFile:
      return OpenFile{};
    case MessageType::kCloseFile:
      return CloseFile{.file_id = r.Take<uint64_t>()};
    case MessageType::kRegisterBuffer: {
      RegisterBuffer m;
      m.kind = static_cast<BufferKind>(r.Take<uint8_t>());
      m.length = r.Take<uint64_t>();
      if (m.kind == BufferKind::kCudaIpc) {
        auto handle = r.TakeBytes(kCudaIpcHandleSize);
        std::copy(handle.begin(), handle.end(), m.cuda_ipc_handle.begin());
      }
      return m;
    }
    case MessageType::kReleaseBuffer:
      return ReleaseBuffer{.buffer_id = r.Take<uint64_t>()};
    case MessageType::kRead: {
      Read m;
      m.file_id = r.Take<uint64_t>();
      m.offset = r.Take<uint64_t>();
      m.length = r.Take<uint64_t>();
      m.buffer_id = r.Take<uint64_t>();
      m.buffer_offset = r.Take<uint64_t>();
      return m;
    }
    case MessageType::kDone: {
      Done m;
      m.result = static_cast<int64_t>(r.Take<uint64_t>());
      m.path = static_cast<DonePath>(r.Take<uint8_t>());
      return m;
    }
    case MessageType::kError: {
      Error m;
      m.error = r.Take<uint32_t>();
      auto text = r.TakeBytes(r.Take<uint16_t>());
      m.message.assign(text.begin(), text.end());
      return m;
    }
    case MessageType::kOpenPath: {
      OpenPath m;
      auto path = r.TakeBytes(r.Take<uint16_t>());
      m.path.assign(path.begin(), path.end());
      return m;
    }
    case MessageType::kReadPath: {
      ReadPath m;
      m.offset = r.Take<uint64_t>();
      m.length = r.Take<uint64_t>();
      m.buffer_id = r.Take<uint64_t>();
      m.buffer_offset = r.Take<uint64_t>();
      auto path = r.TakeBytes(r.Take<uint16_t>());
      m.path.assign(path.begin(), path.end());
      return m;
    }
  }
  return OpenFile{};  // unreachable: DecodeFrameHeader admits known types only
}

MessageType TypeOf(const Message& message) { return static_cast<MessageType>(message.index() + 1); }

// The body after a valid header: the request-level rules.
Result<Frame> DecodeBody(const FrameHeader& header, std::span<const uint8_t> body) {
  if ((header.flags & ~kKnownFlags) != 0) {
    return Invalid(header.type, fmt::format("unknown flag bits {:#06x}", header.flags));
  }
  BodyReader reader(body);
  Message message = ReadBody(header.type, reader);
  if (!reader.ok()) {
    return Invalid(header.type, fmt::format("body of {} bytes is truncated", body.size()));
  }
  if (reader.remaining() != 0) {
    return Invalid(header.type,
                   fmt::format("{} trailing bytes after the body's fields", reader.remaining()));
  }
  REELFS_RETURN_IF_ERROR(std::visit([](const auto& m) { return CheckValues(m); }, message));
  return Frame{.tag = header.tag, .message = std::move(message)};
}

}  // namespace

Result<std::vector<uint8_t>> EncodeFrame(const Frame& frame) {
  REELFS_RETURN_IF_ERROR(std::visit([](const auto& m) { return CheckValues(m); }, frame.message));
  std::vector<uint8_t> out(kFrameHeaderSize);
  std::visit([&out](const auto& m) { AppendBody(m, &out); }, frame.message);
  size_t body_length = out.size() - kFrameHeaderSize;
  // Unreachable with the checks above (the largest body is an ERROR at its limit); kept so a
  // future message cannot emit a frame its peer must refuse.
  if (body_length > kMaxBodyLength) {
    return Invalid(TypeOf(frame.message), fmt::format("body of {} bytes", body_length));
  }
  auto header = EncodeFrameHeader({.length = static_cast<uint32_t>(body_length),
                                   .type = TypeOf(frame.message),
                                   .flags = 0,
                                   .tag = frame.tag});
  std::copy(header.begin(), header.end(), out.begin());
  return out;
}

Result<StreamStep> DecodeNext(std::span<const uint8_t> bytes) {
  StreamStep step;
  if (bytes.size() < kFrameHeaderSize) {
    step.need_more = kFrameHeaderSize - bytes.size();
    return step;
  }
  REELFS_ASSIGN_OR_RETURN(step.header, DecodeFrameHeader(bytes));
  size_t total = kFrameHeaderSize + step.header.length;
  if (bytes.size() < total) {
    step.need_more = total - bytes.size();
    return step;
  }
  step.frame_size = total;
  Result<Frame> frame =
      DecodeBody(step.header, bytes.subspan(kFrameHeaderSize, step.header.length));
  if (frame.ok()) {
    step.frame = std::move(frame).value();
  } else {
    step.body_status = frame.status();
  }
  return step;
}

Result<Frame> DecodeFrame(std::span<const uint8_t> bytes) {
  REELFS_ASSIGN_OR_RETURN(StreamStep step, DecodeNext(bytes));
  if (step.need_more > 0) {
    return Status::InvalidArgument(
        fmt::format("side channel: frame of {} bytes is truncated ({} more needed)", bytes.size(),
                    step.need_more));
  }
  REELFS_RETURN_IF_ERROR(step.body_status);
  if (bytes.size() != step.frame_size) {
    return Status::InvalidArgument(
        fmt::format("side channel: {} trailing bytes after a {}-byte frame",
                    bytes.size() - step.frame_size, step.frame_size));
  }
  return std::move(*step.frame);
}

}  // namespace reelfs::api::protocol

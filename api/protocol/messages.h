// The side channel's messages (docs/protocols/side-channel.md section 5) as plain structs, one
// per MessageType; the body layouts are in that section and in codec.cc. Ids (file_id,
// buffer_id) are chosen by the daemon and come back as a DONE's result.
//
// Thread-safety: value types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

namespace reelfs::api::protocol {

inline constexpr uint32_t kProtocolVersion = 1;
// The per-request cap of section 6: one READ moves at most this many bytes.
inline constexpr uint64_t kMaxReadLength = 64ull << 20;
// cudaIpcMemHandle_t is 64 opaque bytes (CUDA_IPC_HANDLE_SIZE).
inline constexpr size_t kCudaIpcHandleSize = 64;

// HELLO capability bits. Unknown bits are carried, not refused: a newer peer may offer more, and
// each side uses the intersection of what both sent.
namespace capability {
inline constexpr uint32_t kRdma = 1u << 0;
inline constexpr uint32_t kDmaBuf = 1u << 1;
inline constexpr uint32_t kCudaIpc = 1u << 2;
inline constexpr uint32_t kOpenPath = 1u << 3;  // the daemon answers OPEN_PATH and READ_PATH
}  // namespace capability

// Sent first by the client (what it speaks and can use) and answered with a HELLO of the same
// tag by the daemon (its version and what it offers).
struct Hello {
  uint32_t version = kProtocolVersion;
  uint32_t capabilities = 0;
  bool operator==(const Hello&) const = default;
};

// Empty body: the fd opened through the mount travels as SCM_RIGHTS beside it (section 3). The
// answer is a DONE whose result is the new file_id.
struct OpenFile {
  bool operator==(const OpenFile&) const = default;
};

struct CloseFile {
  uint64_t file_id = 0;
  bool operator==(const CloseFile&) const = default;
};

enum class BufferKind : uint8_t {
  kMemfd = 1,    // a sealed memfd in SCM_RIGHTS
  kDmaBuf = 2,   // a dma-buf fd in SCM_RIGHTS
  kCudaIpc = 3,  // no fd: the 64-byte handle is in the body
};

// The answer is a DONE whose result is the new buffer_id. cuda_ipc_handle is on the wire only
// for kCudaIpc; for the other kinds it must stay zero (so a decoded message re-encodes the same).
struct RegisterBuffer {
  BufferKind kind = BufferKind::kMemfd;
  uint64_t length = 0;
  std::array<uint8_t, kCudaIpcHandleSize> cuda_ipc_handle{};
  bool operator==(const RegisterBuffer&) const = default;
};

struct ReleaseBuffer {
  uint64_t buffer_id = 0;
  bool operator==(const ReleaseBuffer&) const = default;
};

// Reads [offset, offset + length) of the file into [buffer_offset, buffer_offset + length) of
// the buffer. The codec refuses length 0, length > kMaxReadLength and ranges that overflow u64;
// whether the window fits the buffer is the daemon's check (it knows the buffer).
struct Read {
  uint64_t file_id = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t buffer_id = 0;
  uint64_t buffer_offset = 0;
  bool operator==(const Read&) const = default;
};

// How a READ's bytes arrived; kNone for answers to anything but a successful READ.
enum class DonePath : uint8_t {
  kNone = 0,
  kRdma = 1,
  kHttp = 2,
  kCache = 3,
};

// The answer to every request but HELLO, matched by the header's tag: result is a byte count
// (READ), an id (OPEN_FILE, REGISTER_BUFFER), 0 (CLOSE_FILE, RELEASE_BUFFER) or -errno.
struct Done {
  int64_t result = 0;
  DonePath path = DonePath::kNone;
  bool operator==(const Done&) const = default;
};

// The daemon's last word before it closes the connection (a bad frame, a bad first message);
// the tag is the offending frame's when it was readable, else 0.
struct Error {
  uint32_t error = 0;   // a positive errno (EPROTO, EMSGSIZE, ...)
  std::string message;  // for humans; at most kMaxErrorMessage bytes
  bool operator==(const Error&) const = default;
};
// The body's limit (kMaxBodyLength, 4 KiB) less the errno and text length fields; codec.cc
// checks the two agree.
inline constexpr size_t kMaxErrorMessage = 4096 - 6;

// Opens a file by its path below the mount root ("dir/file", no leading slash, no empty, "." or
// ".." component), with no fd and no FUSE request: the daemon resolves it and checks the peer's
// credentials against the mount's modes as the kernel's default_permissions would (section 3).
// The answer is a DONE whose result is the new file_id. The codec refuses an empty path, one
// above kMaxOpenPath bytes, and any NUL byte.
struct OpenPath {
  std::string path;
  bool operator==(const OpenPath&) const = default;
};
// The body's limit (kMaxBodyLength, 4 KiB) less the length field.
inline constexpr size_t kMaxOpenPath = 4096 - 2;

// OPEN_PATH, READ and CLOSE_FILE in one request, for small files: the answer is the READ's DONE.
// The codec applies READ's rules to the range and OPEN_PATH's to the path.
struct ReadPath {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t buffer_id = 0;
  uint64_t buffer_offset = 0;
  std::string path;
  bool operator==(const ReadPath&) const = default;
};
inline constexpr size_t kMaxReadPath = 4096 - 34;

// The alternatives are in MessageType order (index + 1 == the wire type).
using Message = std::variant<Hello, OpenFile, CloseFile, RegisterBuffer, ReleaseBuffer, Read, Done,
                             Error, OpenPath, ReadPath>;

// One message with its header's tag (flags are always 0 in version 1, so they are not kept).
struct Frame {
  uint64_t tag = 0;
  Message message;
  bool operator==(const Frame&) const = default;
};

}  // namespace reelfs::api::protocol

// SideChannelClient: the C++ client of the side channel (docs/protocols/side-channel.md), over
// the one wire codec (api/protocol). Connect to the socket a mount announces in its root's
// user.reelfs.mount ("side_channel"), prove access to each file with an fd opened through the
// mount (OpenFile), register a MemfdBuffer (or a dma-buf), then pipeline READs: SubmitRead
// returns a tag at once and NextCompletion yields DONEs in completion order. The synchronous
// calls (OpenFile, CloseFile, RegisterMemfd, RegisterDmaBuf, RegisterCudaIpc, ReleaseBuffer,
// Read) keep any READ completion that arrives meanwhile for NextCompletion.
//
// Sends never deadlock against a daemon that applies back-pressure: while a frame cannot be sent,
// the client keeps reading answers into its completion queue.
//
// Errors: a request the daemon refuses is a Status with that errno (ErrnoToStatus); an ERROR
// frame or a closed connection fails that call and every later one (kUnavailable or
// kInvalidArgument, with the daemon's text).
//
// Thread-safety: none; use one client per thread (each is one connection).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "api/client/memfd_buffer.h"
#include "api/protocol/messages.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::api {

struct Completion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read, or -errno
  protocol::DonePath path = protocol::DonePath::kNone;
};

class SideChannelClient {
 public:
  // Connects and exchanges HELLO, offering `capabilities` (protocol::capability bits).
  static Result<std::unique_ptr<SideChannelClient>> Connect(const std::string& socket_path,
                                                            uint32_t capabilities = 0);
  ~SideChannelClient() = default;
  SideChannelClient(const SideChannelClient&) = delete;
  SideChannelClient& operator=(const SideChannelClient&) = delete;

  // What the daemon offers (the capability bits of its HELLO).
  uint32_t server_capabilities() const { return server_capabilities_; }

  // `fd` must be open on a regular file of the mount (EPERM otherwise); the daemon keeps its own
  // duplicate, so the caller may close `fd` afterwards.
  Result<uint64_t> OpenFile(int fd);
  [[nodiscard]] Status CloseFile(uint64_t file_id);
  Result<uint64_t> RegisterMemfd(const MemfdBuffer& buffer);
  // A dma-buf (GPU memory exported with cuMemGetHandleForAddressRange, or any exporter's) of at
  // least `length` bytes, a page multiple; the daemon keeps its own duplicate of `fd`. The
  // daemon walks its ladder (docs/gpu.md): EOPNOTSUPP when it can neither register the dma-buf
  // with its NIC nor map it, and the caller stages through host memory instead.
  Result<uint64_t> RegisterDmaBuf(int fd, uint64_t length);
  // The first `length` bytes of the GPU allocation a CUDA IPC handle names (cuIpcGetMemHandle of
  // its base). EOPNOTSUPP where the daemon cannot land in it (no usable GPU or no --rdma there),
  // EINVAL for a handle CUDA refuses or a length beyond the allocation.
  Result<uint64_t> RegisterCudaIpc(const std::array<uint8_t, protocol::kCudaIpcHandleSize>& handle,
                                   uint64_t length);
  [[nodiscard]] Status ReleaseBuffer(uint64_t buffer_id);

  // Opens `path` (relative to the mount root) with no fd and no FUSE request; the daemon checks
  // this process's credentials against the mount's modes. Needs capability::kOpenPath in
  // server_capabilities(). EACCES, ENOENT, ENOTDIR, EISDIR as open(2) would give.
  Result<uint64_t> OpenPath(const std::string& path);

  // Pipelined READ: the tag its DONE will carry.
  Result<uint64_t> SubmitRead(const protocol::Read& read);
  // Pipelined READ_PATH (open by path, read, close: one request per small file); its DONE comes
  // through NextCompletion like a READ's. Needs capability::kOpenPath.
  Result<uint64_t> SubmitReadPath(const protocol::ReadPath& read);
  // The next DONE of a submitted READ (blocks until one arrives).
  Result<Completion> NextCompletion();
  // READs submitted whose DONE NextCompletion has not returned yet.
  size_t in_flight() const { return in_flight_; }

  // One READ, waited for: the byte count (short at end of file), or the errno as a Status.
  Result<size_t> Read(const protocol::Read& read);

 private:
  explicit SideChannelClient(UniqueFd socket) : socket_(std::move(socket)) {}

  Result<uint64_t> SubmitReadFrame(protocol::Message read);
  // REGISTER_BUFFER with `fd` in SCM_RIGHTS (none when < 0), waited for: the buffer id.
  Result<uint64_t> Register(const protocol::RegisterBuffer& reg, int fd);
  // Sends one frame (and `fd` in SCM_RIGHTS when >= 0), reading answers while the socket is full.
  [[nodiscard]] Status Send(const protocol::Frame& frame, int fd = -1);
  // Reads what the socket has (blocking when `wait`) and decodes every whole frame into
  // `answers_` (READ DONEs into `completions_`).
  [[nodiscard]] Status Receive(bool wait);
  // Waits for the answer with this tag (a DONE, or HELLO for the handshake).
  Result<protocol::Frame> AwaitAnswer(uint64_t tag);
  // result >= 0, or the errno as a Status naming `what`.
  static Result<int64_t> DoneResult(const protocol::Frame& frame, const char* what);

  UniqueFd socket_;
  uint32_t server_capabilities_ = 0;
  uint64_t next_tag_ = 1;
  size_t in_flight_ = 0;
  Status broken_;                           // set once the connection cannot go on
  std::vector<uint8_t> input_;              // bytes received, not yet decoded
  std::unordered_set<uint64_t> read_tags_;  // tags of READs in flight
  std::deque<Completion> completions_;      // READ DONEs not yet returned
  std::vector<protocol::Frame> answers_;    // other answers not yet claimed
};

}  // namespace reelfs::api

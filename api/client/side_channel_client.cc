#include "api/client/side_channel_client.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "api/protocol/codec.h"
#include "common/status.h"

namespace reelfs::api {
namespace {

using protocol::Done;
using protocol::Frame;

}  // namespace

Result<std::unique_ptr<SideChannelClient>> SideChannelClient::Connect(
    const std::string& socket_path, uint32_t capabilities) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("side channel: bad socket path '" + socket_path + "'");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "side channel: socket");
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoToStatus(errno, "side channel: connect " + socket_path);
  // Nonblocking from here: Send and Receive poll, so a full socket never blocks both sides.
  const int flags = fcntl(fd.get(), F_GETFL);
  if (flags < 0 || fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, "side channel: O_NONBLOCK");
  }
  std::unique_ptr<SideChannelClient> client(new SideChannelClient(std::move(fd)));
  const uint64_t tag = client->next_tag_++;
  REELFS_RETURN_IF_ERROR(
      client->Send(Frame{tag, protocol::Hello{protocol::kProtocolVersion, capabilities}}));
  REELFS_ASSIGN_OR_RETURN(Frame answer, client->AwaitAnswer(tag));
  const auto* hello = std::get_if<protocol::Hello>(&answer.message);
  if (hello == nullptr)
    return Status::InvalidArgument("side channel: HELLO answered by another message");
  if (hello->version != protocol::kProtocolVersion) {
    return Status::FailedPrecondition(
        fmt::format("side channel: the daemon speaks version {}, this client {}", hello->version,
                    protocol::kProtocolVersion));
  }
  client->server_capabilities_ = hello->capabilities;
  return client;
}

Result<uint64_t> SideChannelClient::OpenFile(int fd) {
  const uint64_t tag = next_tag_++;
  REELFS_RETURN_IF_ERROR(Send(Frame{tag, protocol::OpenFile{}}, fd));
  REELFS_ASSIGN_OR_RETURN(Frame answer, AwaitAnswer(tag));
  REELFS_ASSIGN_OR_RETURN(int64_t id, DoneResult(answer, "OPEN_FILE"));
  return static_cast<uint64_t>(id);
}

Status SideChannelClient::CloseFile(uint64_t file_id) {
  const uint64_t tag = next_tag_++;
  REELFS_RETURN_IF_ERROR(Send(Frame{tag, protocol::CloseFile{file_id}}));
  REELFS_ASSIGN_OR_RETURN(Frame answer, AwaitAnswer(tag));
  return DoneResult(answer, "CLOSE_FILE").status();
}

Result<uint64_t> SideChannelClient::Register(const protocol::RegisterBuffer& reg, int fd) {
  const uint64_t tag = next_tag_++;
  REELFS_RETURN_IF_ERROR(Send(Frame{tag, reg}, fd));
  REELFS_ASSIGN_OR_RETURN(Frame answer, AwaitAnswer(tag));
  REELFS_ASSIGN_OR_RETURN(int64_t id, DoneResult(answer, "REGISTER_BUFFER"));
  return static_cast<uint64_t>(id);
}

Result<uint64_t> SideChannelClient::RegisterMemfd(const MemfdBuffer& buffer) {
  return Register({.kind = protocol::BufferKind::kMemfd, .length = buffer.size()}, buffer.fd());
}

Result<uint64_t> SideChannelClient::RegisterDmaBuf(int fd, uint64_t length) {
  if (fd < 0) return Status::InvalidArgument("RegisterDmaBuf: no fd");
  return Register({.kind = protocol::BufferKind::kDmaBuf, .length = length}, fd);
}

Result<uint64_t> SideChannelClient::RegisterCudaIpc(
    const std::array<uint8_t, protocol::kCudaIpcHandleSize>& handle, uint64_t length) {
  return Register(
      {.kind = protocol::BufferKind::kCudaIpc, .length = length, .cuda_ipc_handle = handle},
      /*fd=*/-1);
}

Status SideChannelClient::ReleaseBuffer(uint64_t buffer_id) {
  const uint64_t tag = next_tag_++;
  REELFS_RETURN_IF_ERROR(Send(Frame{tag, protocol::ReleaseBuffer{buffer_id}}));
  REELFS_ASSIGN_OR_RETURN(Frame answer, AwaitAnswer(tag));
  return DoneResult(answer, "RELEASE_BUFFER").status();
}

Result<uint64_t> SideChannelClient::OpenPath(const std::string& path) {
  const uint64_t tag = next_tag_++;
  REELFS_RETURN_IF_ERROR(Send(Frame{tag, protocol::OpenPath{path}}));
  REELFS_ASSIGN_OR_RETURN(Frame answer, AwaitAnswer(tag));
  REELFS_ASSIGN_OR_RETURN(int64_t id, DoneResult(answer, "OPEN_PATH"));
  return static_cast<uint64_t>(id);
}

Result<uint64_t> SideChannelClient::SubmitRead(const protocol::Read& read) {
  return SubmitReadFrame(protocol::Message(read));
}

Result<uint64_t> SideChannelClient::SubmitReadPath(const protocol::ReadPath& read) {
  return SubmitReadFrame(protocol::Message(read));
}

Result<uint64_t> SideChannelClient::SubmitReadFrame(protocol::Message read) {
  const uint64_t tag = next_tag_++;
  // Registered before sending: the DONE may be decoded while Send waits for room.
  read_tags_.insert(tag);
  ++in_flight_;
  if (Status sent = Send(Frame{tag, std::move(read)}); !sent.ok()) {
    read_tags_.erase(tag);
    --in_flight_;
    return sent;
  }
  return tag;
}

Result<Completion> SideChannelClient::NextCompletion() {
  if (completions_.empty() && in_flight_ == 0) {
    return Status::FailedPrecondition("side channel: no READ in flight");
  }
  while (completions_.empty()) REELFS_RETURN_IF_ERROR(Receive(/*wait=*/true));
  Completion c = completions_.front();
  completions_.pop_front();
  --in_flight_;
  return c;
}

Result<size_t> SideChannelClient::Read(const protocol::Read& read) {
  REELFS_ASSIGN_OR_RETURN(uint64_t tag, SubmitRead(read));
  for (;;) {
    auto it = std::find_if(completions_.begin(), completions_.end(),
                           [tag](const Completion& c) { return c.tag == tag; });
    if (it != completions_.end()) {
      const int64_t result = it->result;
      completions_.erase(it);
      --in_flight_;
      if (result < 0) return ErrnoToStatus(static_cast<int>(-result), "side channel READ");
      return static_cast<size_t>(result);
    }
    REELFS_RETURN_IF_ERROR(Receive(/*wait=*/true));
  }
}

Status SideChannelClient::Send(const Frame& frame, int fd) {
  if (!broken_.ok()) return broken_;
  REELFS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, protocol::EncodeFrame(frame));
  size_t sent = 0;
  bool fd_pending = fd >= 0;
  while (sent < bytes.size()) {
    iovec iov{bytes.data() + sent, bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd_pending) {
      // The fd rides with the frame's first byte, so the daemon finds it with that frame.
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    }
    const ssize_t n = sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      fd_pending = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The daemon is not reading (back-pressure): take its answers meanwhile, so it can go on.
      pollfd p{socket_.get(), POLLIN | POLLOUT, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return ErrnoToStatus(errno, "side channel: poll");
      if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) REELFS_RETURN_IF_ERROR(Receive(false));
      continue;
    }
    broken_ = ErrnoToStatus(errno, "side channel: send");
    return broken_;
  }
  return Status::Ok();
}

Status SideChannelClient::Receive(bool wait) {
  if (!broken_.ok()) return broken_;
  uint8_t chunk[16 << 10];
  for (;;) {
    const ssize_t n = recv(socket_.get(), chunk, sizeof chunk, 0);
    if (n > 0) {
      input_.insert(input_.end(), chunk, chunk + n);
      break;
    }
    if (n == 0) {
      broken_ = Status::Unavailable("side channel: the daemon closed the connection");
      return broken_;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      broken_ = ErrnoToStatus(errno, "side channel: recv");
      return broken_;
    }
    if (!wait) return Status::Ok();
    pollfd p{socket_.get(), POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return ErrnoToStatus(errno, "side channel: poll");
  }
  size_t used = 0;
  while (used < input_.size()) {
    auto step = protocol::DecodeNext(std::span<const uint8_t>(input_).subspan(used));
    if (!step.ok()) {
      broken_ = step.status().WithContext("side channel: from the daemon");
      return broken_;
    }
    if (step->need_more > 0) break;
    used += step->frame_size;
    if (!step->body_status.ok()) {
      broken_ = step->body_status.WithContext("side channel: from the daemon");
      return broken_;
    }
    Frame& frame = *step->frame;
    if (const auto* error = std::get_if<protocol::Error>(&frame.message)) {
      broken_ = ErrnoToStatus(static_cast<int>(error->error),
                              "side channel: the daemon closed the connection: " + error->message);
      return broken_;
    }
    const auto* done = std::get_if<Done>(&frame.message);
    if (done != nullptr && read_tags_.erase(frame.tag) == 1) {
      completions_.push_back(Completion{frame.tag, done->result, done->path});
    } else {
      answers_.push_back(std::move(frame));
    }
  }
  input_.erase(input_.begin(), input_.begin() + static_cast<ptrdiff_t>(used));
  return Status::Ok();
}

Result<Frame> SideChannelClient::AwaitAnswer(uint64_t tag) {
  for (;;) {
    auto it = std::find_if(answers_.begin(), answers_.end(),
                           [tag](const Frame& f) { return f.tag == tag; });
    if (it != answers_.end()) {
      Frame f = std::move(*it);
      answers_.erase(it);
      return f;
    }
    REELFS_RETURN_IF_ERROR(Receive(/*wait=*/true));
  }
}

Result<int64_t> SideChannelClient::DoneResult(const Frame& frame, const char* what) {
  const auto* done = std::get_if<Done>(&frame.message);
  if (done == nullptr) {
    return Status::InvalidArgument(
        fmt::format("side channel: {} answered by another message", what));
  }
  if (done->result < 0) {
    return ErrnoToStatus(static_cast<int>(-done->result), fmt::format("side channel {}", what));
  }
  return done->result;
}

}  // namespace reelfs::api

// api/client: the C++ side-channel client against a scripted daemon on a real Unix socket (the
// daemon end is this test's: it decodes with the same codec and answers what each case wants).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "api/client/side_channel_client.h"
#include "api/protocol/codec.h"
#include "common/unique_fd.h"

namespace reelfs::api {
namespace {

using protocol::Done;
using protocol::Frame;

// One connection of the scripted daemon: blocking reads of whole frames (with their fds) and
// blocking writes, so a client that does not read its answers blocks this side (back-pressure).
class Conn {
 public:
  explicit Conn(UniqueFd fd) : fd_(std::move(fd)) {}

  // The next frame and the fds that came with it; nullopt at end of stream.
  std::optional<Frame> Next(std::vector<UniqueFd>* fds) {
    for (;;) {
      auto step = protocol::DecodeNext(input_);
      REQUIRE(step.ok());
      if (step->frame_size > 0) {
        REQUIRE(step->body_status.ok());
        Frame f = *step->frame;
        input_.erase(input_.begin(), input_.begin() + static_cast<ptrdiff_t>(step->frame_size));
        if (fds != nullptr) *fds = std::move(fds_);
        fds_.clear();
        return f;
      }
      uint8_t buf[4096];
      iovec iov{buf, sizeof buf};
      alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
      if (n <= 0) return std::nullopt;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int got;
          std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          fds_.emplace_back(got);
        }
      }
      input_.insert(input_.end(), buf, buf + n);
    }
  }

  void Send(const Frame& f) {
    auto bytes = protocol::EncodeFrame(f);
    REQUIRE(bytes.ok());
    size_t off = 0;
    while (off < bytes->size()) {
      const ssize_t n = send(fd_.get(), bytes->data() + off, bytes->size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  void Answer(uint64_t tag, int64_t result, protocol::DonePath path = protocol::DonePath::kNone) {
    Send(Frame{tag, Done{result, path}});
  }
  // The handshake every case starts with; returns the client's capabilities.
  uint32_t Hello(uint32_t offer, std::atomic<uint32_t>* seen = nullptr) {
    auto f = Next(nullptr);
    REQUIRE(f.has_value());
    const auto* hello = std::get_if<protocol::Hello>(&f->message);
    REQUIRE(hello != nullptr);
    // Noted before answering: the client's side may check it as soon as it has the answer.
    if (seen != nullptr) *seen = hello->capabilities;
    Send(Frame{f->tag, protocol::Hello{protocol::kProtocolVersion, offer}});
    return hello->capabilities;
  }
  void Close() { fd_.Reset(); }

 private:
  UniqueFd fd_;
  std::vector<uint8_t> input_;
  std::vector<UniqueFd> fds_;
};

// A listening socket in a temp dir and one thread that serves one connection with `script`.
class ScriptedDaemon {
 public:
  explicit ScriptedDaemon(std::function<void(Conn&)> script) {
    char templ[] = "/tmp/reelfs-client-test-XXXXXX";
    REQUIRE(mkdtemp(templ) != nullptr);
    dir_ = templ;
    path_ = dir_ + "/s.sock";
    listen_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    REQUIRE(bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listen_.get(), 4) == 0);
    thread_ = std::thread([this, script = std::move(script)] {
      UniqueFd c(accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.valid()) return;
      Conn conn(std::move(c));
      script(conn);
    });
  }
  ~ScriptedDaemon() {
    thread_.join();
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
  UniqueFd listen_;
  std::thread thread_;
};

int ErrnoOf(const Status& s) { return s.detail().sys_errno; }

TEST_SUITE("api") {
  TEST_CASE("client: HELLO both ways, capabilities kept") {
    std::atomic<uint32_t> offered{0};
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(protocol::capability::kRdma | (1u << 9), &offered);
      c.Next(nullptr);  // until the client goes
    });
    {
      auto client = SideChannelClient::Connect(daemon.path(), protocol::capability::kDmaBuf);
      REQUIRE(client.ok());
      // Unknown bits are carried, not refused (the spec): the caller sees them.
      CHECK((*client)->server_capabilities() == (protocol::capability::kRdma | (1u << 9)));
    }
    CHECK(offered == protocol::capability::kDmaBuf);
  }

  TEST_CASE("client: OPEN_FILE passes the fd itself; a refusal is its errno") {
    char file_templ[] = "/tmp/reelfs-client-file-XXXXXX";
    UniqueFd file(mkstemp(file_templ));
    REQUIRE(file.valid());
    struct stat want {};
    REQUIRE(fstat(file.get(), &want) == 0);
    std::atomic<bool> same_inode{false};
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(0);
      std::vector<UniqueFd> fds;
      auto open1 = c.Next(&fds);
      REQUIRE(open1.has_value());
      struct stat got {};
      same_inode = fds.size() == 1 && fstat(fds[0].get(), &got) == 0 && got.st_ino == want.st_ino &&
                   got.st_dev == want.st_dev;
      c.Answer(open1->tag, 7);
      auto open2 = c.Next(&fds);
      REQUIRE(open2.has_value());
      c.Answer(open2->tag, -EPERM);
      auto close = c.Next(nullptr);
      REQUIRE(close.has_value());
      CHECK(std::get<protocol::CloseFile>(close->message).file_id == 7);
      c.Answer(close->tag, -EBADF);
      c.Next(nullptr);
    });
    auto client = SideChannelClient::Connect(daemon.path());
    REQUIRE(client.ok());
    auto id = (*client)->OpenFile(file.get());
    REQUIRE(id.ok());
    CHECK(*id == 7);
    auto refused = (*client)->OpenFile(file.get());
    REQUIRE_FALSE(refused.ok());
    CHECK(ErrnoOf(refused.status()) == EPERM);
    CHECK(ErrnoOf((*client)->CloseFile(7)) == EBADF);
    client->reset();
    CHECK(same_inode);
    unlink(file_templ);
  }

  TEST_CASE("client: a memfd buffer is sealed, shared, and what the daemon writes is seen") {
    std::atomic<bool> sealed{false};
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(0);
      std::vector<UniqueFd> fds;
      auto reg = c.Next(&fds);
      REQUIRE(reg.has_value());
      REQUIRE(fds.size() == 1);
      const auto& r = std::get<protocol::RegisterBuffer>(reg->message);
      const int seals = fcntl(fds[0].get(), F_GET_SEALS);
      sealed = seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW);
      // Shrinking must be refused by the kernel: that is what keeps the daemon safe.
      CHECK(ftruncate(fds[0].get(), 0) != 0);
      void* map = mmap(nullptr, r.length, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0].get(), 0);
      REQUIRE(map != MAP_FAILED);
      std::memset(map, 0x5a, 100);
      munmap(map, r.length);
      c.Answer(reg->tag, 3);
      auto rel = c.Next(nullptr);
      REQUIRE(rel.has_value());
      c.Answer(rel->tag, 0);
      c.Next(nullptr);
    });
    auto buffer = MemfdBuffer::Create(5000);
    REQUIRE(buffer.ok());
    CHECK(buffer->size() % static_cast<size_t>(sysconf(_SC_PAGESIZE)) == 0);
    CHECK(buffer->size() >= 5000);
    auto client = SideChannelClient::Connect(daemon.path());
    REQUIRE(client.ok());
    auto id = (*client)->RegisterMemfd(*buffer);
    REQUIRE(id.ok());
    CHECK(*id == 3);
    CHECK(buffer->bytes()[0] == std::byte{0x5a});
    CHECK(buffer->bytes()[99] == std::byte{0x5a});
    CHECK(buffer->bytes()[100] == std::byte{0});
    CHECK((*client)->ReleaseBuffer(3).ok());
    client->reset();
    CHECK(sealed);
    CHECK(MemfdBuffer::Create(0).status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE("client: a dma-buf registration passes the fd itself; a refusal is its errno") {
    std::atomic<bool> same_file{false};
    char templ[] = "/tmp/reelfs-client-dmabuf-XXXXXX";
    UniqueFd mine(mkstemp(templ));
    unlink(templ);
    struct stat want {};
    REQUIRE(fstat(mine.get(), &want) == 0);
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(protocol::capability::kDmaBuf);
      std::vector<UniqueFd> fds;
      auto reg = c.Next(&fds);
      REQUIRE(reg.has_value());
      REQUIRE(fds.size() == 1);
      const auto& r = std::get<protocol::RegisterBuffer>(reg->message);
      CHECK(r.kind == protocol::BufferKind::kDmaBuf);
      CHECK(r.length == 8192);
      struct stat got {};
      same_file =
          fstat(fds[0].get(), &got) == 0 && got.st_ino == want.st_ino && got.st_dev == want.st_dev;
      c.Answer(reg->tag, 4);
      auto again = c.Next(&fds);
      REQUIRE(again.has_value());
      c.Answer(again->tag, -EOPNOTSUPP);
      c.Next(nullptr);
    });
    auto client = SideChannelClient::Connect(daemon.path(), protocol::capability::kDmaBuf);
    REQUIRE(client.ok());
    CHECK((*client)->server_capabilities() == protocol::capability::kDmaBuf);
    auto id = (*client)->RegisterDmaBuf(mine.get(), 8192);
    REQUIRE(id.ok());
    CHECK(*id == 4);
    auto refused = (*client)->RegisterDmaBuf(mine.get(), 8192);
    REQUIRE_FALSE(refused.ok());
    CHECK(ErrnoOf(refused.status()) == EOPNOTSUPP);
    CHECK((*client)->RegisterDmaBuf(-1, 8192).status().code() == StatusCode::kInvalidArgument);
    client->reset();
    CHECK(same_file);
  }

  TEST_CASE("client: a CUDA IPC registration carries the handle and no fd") {
    std::array<uint8_t, protocol::kCudaIpcHandleSize> handle{};
    for (size_t i = 0; i < handle.size(); ++i) handle[i] = static_cast<uint8_t>(i * 7 + 1);
    std::atomic<bool> as_sent{false};
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(protocol::capability::kCudaIpc);
      std::vector<UniqueFd> fds;
      auto reg = c.Next(&fds);
      REQUIRE(reg.has_value());
      const auto& r = std::get<protocol::RegisterBuffer>(reg->message);
      as_sent = fds.empty() && r.kind == protocol::BufferKind::kCudaIpc && r.length == (2u << 20) &&
                r.cuda_ipc_handle == handle;
      c.Answer(reg->tag, -EOPNOTSUPP);
      c.Next(nullptr);
    });
    auto client = SideChannelClient::Connect(daemon.path(), protocol::capability::kCudaIpc);
    REQUIRE(client.ok());
    auto refused = (*client)->RegisterCudaIpc(handle, 2u << 20);
    REQUIRE_FALSE(refused.ok());
    CHECK(ErrnoOf(refused.status()) == EOPNOTSUPP);
    client->reset();
    CHECK(as_sent);
  }

  TEST_CASE("client: READs pipelined, answered out of order, a sync call in between") {
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(0);
      std::vector<Frame> reads;
      for (int i = 0; i < 3; ++i) reads.push_back(*c.Next(nullptr));
      auto close = c.Next(nullptr);
      REQUIRE(close.has_value());
      // The READ DONEs come first, in reverse, then the CLOSE_FILE's.
      c.Answer(reads[2].tag, 30, protocol::DonePath::kHttp);
      c.Answer(reads[0].tag, -ESTALE);
      c.Answer(close->tag, 0);
      c.Answer(reads[1].tag, 20, protocol::DonePath::kRdma);
      c.Next(nullptr);
    });
    auto client = SideChannelClient::Connect(daemon.path());
    REQUIRE(client.ok());
    std::vector<uint64_t> tags;
    for (uint64_t i = 0; i < 3; ++i) {
      auto tag = (*client)->SubmitRead(protocol::Read{1, i * 10, 10, 2, i * 10});
      REQUIRE(tag.ok());
      tags.push_back(*tag);
    }
    CHECK((*client)->in_flight() == 3);
    CHECK((*client)->CloseFile(1).ok());
    auto a = (*client)->NextCompletion();
    auto b = (*client)->NextCompletion();
    auto d = (*client)->NextCompletion();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(d.ok());
    CHECK(a->tag == tags[2]);
    CHECK(a->result == 30);
    CHECK(a->path == protocol::DonePath::kHttp);
    CHECK(b->tag == tags[0]);
    CHECK(b->result == -ESTALE);
    CHECK(d->tag == tags[1]);
    CHECK(d->path == protocol::DonePath::kRdma);
    CHECK((*client)->in_flight() == 0);
    CHECK((*client)->NextCompletion().status().code() == StatusCode::kFailedPrecondition);
  }

  TEST_CASE("client: 20 000 READs submitted without reading answers does not deadlock") {
    // The daemon answers each READ at once with blocking writes: once the client's receive
    // buffer is full the daemon blocks, stops reading, and the client's sends would block too
    // unless it drains answers while it waits.
    constexpr int kReads = 20000;
    std::atomic<int> answered{0};
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(0);
      for (;;) {
        auto f = c.Next(nullptr);
        if (!f) return;
        c.Answer(f->tag, 1, protocol::DonePath::kHttp);
        ++answered;
      }
    });
    auto client = SideChannelClient::Connect(daemon.path());
    REQUIRE(client.ok());
    for (int i = 0; i < kReads; ++i) {
      REQUIRE((*client)->SubmitRead(protocol::Read{1, 0, 1, 1, 0}).ok());
    }
    int done = 0;
    while ((*client)->in_flight() > 0) {
      auto c = (*client)->NextCompletion();
      REQUIRE(c.ok());
      CHECK(c->result == 1);
      ++done;
    }
    CHECK(done == kReads);
    client->reset();
    CHECK(answered == kReads);
  }

  TEST_CASE("client: an ERROR frame or a closed connection fails this call and every later one") {
    ScriptedDaemon daemon([&](Conn& c) {
      c.Hello(0);
      auto f = c.Next(nullptr);
      REQUIRE(f.has_value());
      c.Send(Frame{f->tag, protocol::Error{EPROTO, "bad frame"}});
      c.Close();
    });
    auto client = SideChannelClient::Connect(daemon.path());
    REQUIRE(client.ok());
    auto r = (*client)->Read(protocol::Read{1, 0, 10, 1, 0});
    REQUIRE_FALSE(r.ok());
    CHECK(ErrnoOf(r.status()) == EPROTO);
    CHECK(std::string(r.status().message()).find("bad frame") != std::string::npos);
    CHECK_FALSE((*client)->CloseFile(1).ok());

    ScriptedDaemon gone([&](Conn& c) {
      c.Hello(0);
      c.Close();
    });
    auto second = SideChannelClient::Connect(gone.path());
    REQUIRE(second.ok());
    auto closed = (*second)->OpenFile(0);
    CHECK_FALSE(closed.ok());
    CHECK(SideChannelClient::Connect("/nonexistent/dir/s.sock").status().code() != StatusCode::kOk);
  }
}

}  // namespace
}  // namespace reelfs::api

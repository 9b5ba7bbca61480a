#include "api/server/side_channel_server.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "api/protocol/codec.h"
#include "api/server/buffer_check.h"
#include "api/server/path_access.h"
#include "common/cancel.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/unique_fd.h"
#include "fuse/lowlevel/errno_map.h"

namespace reelfs::api {
namespace {

using protocol::DonePath;
using protocol::Frame;

constexpr std::string_view kSubject = "api";
// A READ runs through the FileSystem in chunks of the kernel's FUSE read size, a few at a time,
// so the prefetcher sees the access pattern it is tuned for.
constexpr uint64_t kChunk = 1 << 20;
constexpr int kChunksInFlight = 4;
// Answers queued but not yet taken by the client, beyond which the server stops reading it.
constexpr size_t kMaxQueuedAnswerBytes = 1 << 20;
// Passed fds waiting for the frame that takes them.
constexpr size_t kMaxPendingFds = 64;

int ErrnoOf(const Status& s) {
  const int e = fuse::StatusToErrno(s);
  return e == 0 ? EIO : e;
}

// REGISTER_BUFFER's answer to a refused buffer (section 4): a buffer that is not what it claims
// is EINVAL, one no rung of the ladder can take EOPNOTSUPP; anything else through the table.
int64_t RefusalErrno(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) return -EINVAL;
  if (s.code() == StatusCode::kUnimplemented) return -EOPNOTSUPP;
  return -static_cast<int64_t>(ErrnoOf(s));
}

}  // namespace

// Counts the objects whose destructors call into the FileSystem, so the server's destructor can
// wait for the last of them.
struct LiveCount {
  Mutex mu;
  CondVar cv;
  size_t live = 0;
  void Add() {
    MutexLock lock(mu);
    ++live;
  }
  void Drop() {
    MutexLock lock(mu);
    if (--live == 0) cv.notify_all();
  }
  void WaitZero() {
    MutexLock lock(mu);
    cv.wait(lock, [this] { return live == 0; });
  }
};

// An open file of one client: the daemon's dup of the client's fd pins the inode; the
// FileSystem handle is released when the last READ holding this state is done.
struct OpenedFile {
  OpenedFile(fuse::FileSystem& fs, LiveCount& live, UniqueFd fd, fuse::InodeId ino, uint64_t fh)
      : fs(fs), live(live), fd(std::move(fd)), ino(ino), fh(fh) {
    live.Add();
  }
  ~OpenedFile() {
    fs.Release(fh);
    live.Drop();
  }
  fuse::FileSystem& fs;
  LiveCount& live;
  UniqueFd fd;
  fuse::InodeId ino;
  uint64_t fh;
};

// A registered buffer: what a READ's bytes may be written into. A memfd is always mapped; a
// dma-buf is registered with the data channel as itself where the NIC takes it (then not mapped:
// a GPU's dma-buf has no CPU mapping), else mapped, and the mapping registered where it can be;
// CUDA IPC memory only ever through its registration. Members in teardown order: the region
// goes before the mappings, the mappings before the dma-buf's fd closes.
struct ClientBuffer {
  UniqueFd dmabuf;  // a dma-buf's fd (invalid for a memfd): the CPU's writes are synced through it
  std::unique_ptr<ImportedGpuMemory> gpu;  // a CUDA IPC buffer: its mapping and registration
  std::unique_ptr<MappedBuffer> mapped;    // null for a dma-buf registered as itself
  std::shared_ptr<rdmaio::RegisteredRegion> region;  // null without a registrar
  uint64_t size = 0;
  // The bytes the daemon may copy into; empty when only the NIC can write the buffer.
  std::span<std::byte> host() const {
    return mapped != nullptr ? mapped->bytes() : std::span<std::byte>();
  }
  // A mapped dma-buf: each READ that the CPU may write is bracketed by DMA_BUF_IOCTL_SYNC.
  bool cpu_sync() const { return dmabuf.valid() && mapped != nullptr; }
};

struct Client {
  Client(LiveCount& live, UniqueFd socket) : live(live), socket(std::move(socket)) { live.Add(); }
  ~Client() { live.Drop(); }

  LiveCount& live;
  UniqueFd socket;  // the event loop's only
  std::shared_ptr<CancellationToken> interrupt = CancellationToken::Create();
  std::vector<uint8_t> input;  // event loop only
  std::deque<UniqueFd> fds;    // event loop only: received, not yet taken by a frame
  bool hello = false;          // event loop only
  std::string peer;            // for the log
  // SO_PEERCRED and SO_PEERGROUPS at connect; absent when they could not be read (OPEN_PATH is
  // then refused: it is decided on these).
  std::optional<PeerCredentials> cred;
  uint64_t next_id = 1;  // event loop only

  // Shared with FileSystem callbacks.
  Mutex mu;
  bool gone = false;     // disconnected: nothing is written into its buffers any more
  std::string out;       // answers not yet sent
  size_t in_flight = 0;  // requests dispatched, answer not yet queued
  // By id. A READ holds its file and buffer, so CLOSE_FILE and RELEASE_BUFFER (and a disconnect)
  // release them only once the READs into them are done.
  std::unordered_map<uint64_t, std::shared_ptr<OpenedFile>> files;
  std::unordered_map<uint64_t, std::shared_ptr<ClientBuffer>> buffers;
};

struct SideChannelServer::Impl {
  fuse::FileSystem& fs;
  ServerOptions options;
  UniqueFd listen;
  UniqueFd wake;  // eventfd: a callback queued an answer, or Stop
  std::atomic<bool> stop{false};
  std::thread loop;
  LiveCount live;
  std::unordered_map<int, std::shared_ptr<Client>> clients;  // event loop only

  std::atomic<uint64_t> clients_accepted{0}, clients_connected{0}, requests{0}, reads{0},
      read_errors{0}, bytes_read{0}, direct_reads{0}, direct_bytes{0}, rdma_bytes{0},
      bytes_copied{0}, path_opens{0}, files_refused{0}, protocol_errors{0};

  // Directories OPEN_PATH walked through, by path below the root, each holding one lookup
  // reference (as the kernel's dentry cache holds one for a path it resolved): the inode and its
  // cached listing stay between opens instead of being forgotten and listed again per file.
  // Attributes are kept for the permission check (the mount's modes are fixed). Bounded; given
  // back when the server stops.
  struct CachedDir {
    fuse::InodeId ino = 0;
    fuse::Attributes attr;
  };
  static constexpr size_t kMaxCachedDirs = 4096;
  Mutex dir_mu;
  std::unordered_map<std::string, CachedDir> dir_cache GUARDED_BY(dir_mu);

  // The mounting user: without allow_other only it may use the mount (OPEN_PATH mirrors that).
  const uid_t owner_uid = geteuid();
  const gid_t owner_gid = getegid();

  Impl(fuse::FileSystem& f, ServerOptions o) : fs(f), options(std::move(o)) {}

  void Wake() {
    const uint64_t one = 1;
    (void)!write(wake.get(), &one, sizeof one);
  }

  // Queues an answer (any thread); the loop sends it.
  void Answer(Client& c, const Frame& frame, bool finishes_request = true) {
    auto bytes = protocol::EncodeFrame(frame);
    {
      MutexLock lock(c.mu);
      if (finishes_request && c.in_flight > 0) --c.in_flight;
      if (c.gone || !bytes.ok()) return;
      c.out.append(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    }
    Wake();
  }
  void Done(Client& c, uint64_t tag, int64_t result, DonePath path = DonePath::kNone) {
    Answer(c, Frame{tag, protocol::Done{result, path}});
  }

  void Run();
  void Accept();
  // False when the client is to be dropped.
  bool ReadFrom(const std::shared_ptr<Client>& c);
  bool WriteTo(Client& c);
  bool Dispatch(const std::shared_ptr<Client>& c, const protocol::StreamStep& step);
  void Disconnect(int fd, const char* why);
  void FailConnection(Client& c, uint64_t tag, int err, const std::string& text);

  void OpenFile(const std::shared_ptr<Client>& c, uint64_t tag);
  // OPEN_PATH; with `read`, READ_PATH (the READ's DONE answers it).
  void OpenPath(const std::shared_ptr<Client>& c, uint64_t tag, const std::string& path,
                std::optional<protocol::ReadPath> read = std::nullopt);
  // Registers an opened FileSystem handle as the client's file `id` and answers the request.
  void AddFile(const std::shared_ptr<Client>& c, uint64_t tag, uint64_t id, UniqueFd fd,
               fuse::InodeId ino, uint64_t fh);
  void RegisterBuffer(const std::shared_ptr<Client>& c, uint64_t tag,
                      const protocol::RegisterBuffer& reg);
  Result<std::shared_ptr<ClientBuffer>> MemfdBuffer(const Client& c, UniqueFd fd, uint64_t length);
  // The daemon's end of the buffer ladder for a client's dma-buf (docs/gpu.md), one log line
  // per step down: the NIC registers the dma-buf itself; else its CPU mapping (registered with
  // the NIC where it can be, else copied into); else kUnimplemented (the client stages).
  Result<std::shared_ptr<ClientBuffer>> DmaBufBuffer(const Client& c, UniqueFd fd, uint64_t length);
  // CUDA IPC memory through options.gpu_importer: registered with the NIC, or refused.
  Result<std::shared_ptr<ClientBuffer>> CudaIpcBuffer(
      const Client& c, const std::array<uint8_t, protocol::kCudaIpcHandleSize>& handle,
      uint64_t length);
  // Gives `buffer` the client's next buffer id and answers REGISTER_BUFFER with it.
  void AddBuffer(Client& c, uint64_t tag, std::shared_ptr<ClientBuffer> buffer);
  // With a registrar, registers the buffer's mapping (`what` names it in the warning if not).
  void RegisterMapping(const Client& c, ClientBuffer& buffer, std::string_view what);
  void StartRead(const std::shared_ptr<Client>& c, uint64_t tag, const protocol::Read& read);
  // A READ of `file` (the client's, or READ_PATH's own) into one of the client's buffers.
  void ReadInto(const std::shared_ptr<Client>& c, uint64_t tag, std::shared_ptr<OpenedFile> file,
                uint64_t offset, uint64_t length, uint64_t buffer_id, uint64_t buffer_offset);
};

// One READ: its chunks go through the FileSystem a few at a time; each copies its bytes into
// the client's buffer under the client's lock, unless the client is gone.
struct ReadOp : std::enable_shared_from_this<ReadOp> {
  SideChannelServer::Impl* server = nullptr;
  std::shared_ptr<Client> client;
  std::shared_ptr<OpenedFile> file;
  std::shared_ptr<ClientBuffer> buffer;
  uint64_t tag = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t buffer_offset = 0;

  Mutex mu;
  uint64_t next = 0;  // offset (relative) of the next chunk to issue
  int chunks = 0;     // in flight
  uint64_t bytes = 0;
  bool eof = false;
  int error = 0;
  bool answered = false;

  void Pump() {
    for (;;) {
      uint64_t at = 0, size = 0;
      {
        MutexLock lock(mu);
        if (answered) return;
        if (chunks == 0 && (next >= length || eof || error != 0)) {
          answered = true;
        } else if (chunks < kChunksInFlight && next < length && !eof && error == 0) {
          at = next;
          size = std::min(kChunk, length - next);
          next += size;
          ++chunks;
        } else {
          return;
        }
      }
      if (size == 0) return Finish(server->options.data_path);
      auto self = shared_from_this();
      server->fs.Read(
          file->ino, file->fh, offset + at, size, client->interrupt,
          [self, at, size](Result<fuse::ReadData> got) { self->Chunk(at, size, std::move(got)); });
    }
  }

  void Chunk(uint64_t at, uint64_t size, Result<fuse::ReadData> got) {
    uint64_t n = 0;
    int err = 0;
    if (!got.ok()) {
      err = ErrnoOf(got.status());
    } else {
      MutexLock lock(client->mu);
      if (client->gone) {
        err = ECONNRESET;
      } else {
        std::byte* dst = buffer->host().data() + buffer_offset + at;
        for (const auto& piece : got->pieces) {
          const uint64_t take = std::min<uint64_t>(piece.size(), size - n);
          std::memcpy(dst + n, piece.data(), take);
          n += take;
        }
        // A spliced read's bytes wait in a pipe (fuse/core/splicing_prefetcher.h), a cached
        // file's at an offset of the cache's file (fuse/core/cached_file_reads.h).
        const uint64_t in_fd = got->fd >= 0 ? std::min<uint64_t>(got->fd_bytes, size - n) : 0;
        for (uint64_t taken = 0; taken < in_fd && err == 0;) {
          const ssize_t r =
              got->fd_offset >= 0
                  ? ::pread(got->fd, dst + n, in_fd - taken,
                            static_cast<off_t>(got->fd_offset + static_cast<int64_t>(taken)))
                  : ::read(got->fd, dst + n, in_fd - taken);
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) {
            err = r < 0 ? errno : EIO;
            break;
          }
          taken += static_cast<uint64_t>(r);
          n += static_cast<uint64_t>(r);
        }
      }
    }
    {
      MutexLock lock(mu);
      --chunks;
      if (err != 0 && error == 0) error = err;
      bytes += n;
      if (err == 0 && n < size) eof = true;
    }
    server->bytes_copied.fetch_add(n, std::memory_order_relaxed);
    Pump();
  }

  // The whole READ as one FileSystem::ReadTo. With a registered buffer (--rdma) the data channel
  // fetches into the client's window (the gateway writes it; the channel fences it before the
  // answer); otherwise the GET's body goes into the client's buffer as it arrives, each chunk
  // under the client's lock, so nothing lands after a disconnect.
  void Direct() {
    auto self = shared_from_this();
    fuse::FileSystem::ReadTarget target;
    if (buffer->region != nullptr) {
      target.window = rdmaio::RegisteredWindow{buffer->region, buffer_offset, length};
    } else {
      target.sink = [self](uint64_t at, std::span<const std::byte> chunk) -> Status {
        MutexLock lock(self->client->mu);
        if (self->client->gone) return Status::Cancelled("side-channel client disconnected");
        // ReadTo never passes `length`; checked again because a wild write is the one thing
        // this server must never do.
        if (at > self->length || chunk.size() > self->length - at) {
          return Status::Internal("ReadTo sink called past the READ's window");
        }
        std::memcpy(self->buffer->host().data() + self->buffer_offset + at, chunk.data(),
                    chunk.size());
        return Status::Ok();
      };
    }
    server->fs.ReadTo(
        file->ino, file->fh, offset, length, std::move(target), client->interrupt,
        [self](Result<fuse::FileSystem::ReadToResult> got) {
          bool gone = false;
          {
            MutexLock lock(self->client->mu);
            gone = self->client->gone;
          }
          DonePath path = DonePath::kHttp;
          {
            MutexLock lock(self->mu);
            if (gone) {
              self->error = ECONNRESET;
            } else if (!got.ok()) {
              // A buffer only the NIC can write, and a channel that fell back to HTTP: the
              // spec's answer is EOPNOTSUPP (the client reads the range by another rung).
              self->error =
                  got.status().code() == StatusCode::kUnimplemented && self->buffer->host().empty()
                      ? EOPNOTSUPP
                      : ErrnoOf(got.status());
            } else {
              self->bytes = got->bytes;
              if (got->via == rdmaio::DataPath::kRdma) path = DonePath::kRdma;
              if (got->via == rdmaio::DataPath::kCache) path = DonePath::kCache;
            }
            self->answered = true;
          }
          if (self->error == 0) {
            self->server->direct_reads.fetch_add(1, std::memory_order_relaxed);
            self->server->direct_bytes.fetch_add(self->bytes, std::memory_order_relaxed);
            (path == DonePath::kRdma ? self->server->rdma_bytes : self->server->bytes_copied)
                .fetch_add(self->bytes, std::memory_order_relaxed);
          }
          self->Finish(path);
        });
  }

  void Finish(DonePath path) {
    if (buffer->gpu != nullptr && error == 0) {
      Status flushed = buffer->gpu->AfterRdmaWrites();
      if (!flushed.ok()) error = ErrnoOf(flushed);
    }
    if (buffer->cpu_sync()) {
      Status synced = SyncDmaBufForCpuWrite(buffer->dmabuf.get(), /*start=*/false);
      if (!synced.ok() && error == 0) error = ErrnoOf(synced);
    }
    if (error != 0) {
      server->read_errors.fetch_add(1, std::memory_order_relaxed);
      server->Done(*client, tag, -static_cast<int64_t>(error));
    } else {
      server->reads.fetch_add(1, std::memory_order_relaxed);
      server->bytes_read.fetch_add(bytes, std::memory_order_relaxed);
      server->Done(*client, tag, static_cast<int64_t>(bytes), path);
    }
  }
};

Result<std::unique_ptr<SideChannelServer>> SideChannelServer::Start(fuse::FileSystem& fs,
                                                                    ServerOptions options) {
  auto impl = std::make_unique<Impl>(fs, std::move(options));
  const std::string& path = impl->options.socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.front() != '/' || path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("side channel: bad socket path '" + path + "'");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::FailedPrecondition("side channel: " + path + " exists and is not a socket");
    }
    unlink(path.c_str());  // a socket left by a daemon that died
  }
  impl->listen = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!impl->listen.valid()) return ErrnoToStatus(errno, "side channel: socket");
  if (bind(impl->listen.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return ErrnoToStatus(errno, "side channel: bind " + path);
  }
  if (chmod(path.c_str(), impl->options.allow_other ? 0666 : 0600) != 0 ||
      listen(impl->listen.get(), 128) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return ErrnoToStatus(err, "side channel: listen " + path);
  }
  impl->wake = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->wake.valid()) {
    unlink(path.c_str());
    return ErrnoToStatus(errno, "side channel: eventfd");
  }
  Impl* raw = impl.get();
  impl->loop = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<SideChannelServer>(new SideChannelServer(std::move(impl)));
}

SideChannelServer::SideChannelServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SideChannelServer::~SideChannelServer() {
  impl_->stop.store(true);
  impl_->Wake();
  impl_->loop.join();
  // Every client was disconnected by the loop; wait for the reads still owed by the FileSystem
  // (they hold the client and file states) so nothing calls back into a server that is gone.
  impl_->live.WaitZero();
  {
    MutexLock lock(impl_->dir_mu);
    for (const auto& [path, dir] : impl_->dir_cache) impl_->fs.Forget(dir.ino, 1);
    impl_->dir_cache.clear();
  }
  unlink(impl_->options.socket_path.c_str());
}

const std::string& SideChannelServer::socket_path() const { return impl_->options.socket_path; }

namespace {

// Each counter once: its name in user.reelfs.metrics, the server's atomic, the snapshot's field.
struct CounterRow {
  const char* name;
  std::atomic<uint64_t> SideChannelServer::Impl::*live;
  uint64_t ServerCounters::*snapshot;
};
using Impl = SideChannelServer::Impl;
constexpr CounterRow kCounters[] = {
    {"clients_accepted", &Impl::clients_accepted, &ServerCounters::clients_accepted},
    {"clients_connected", &Impl::clients_connected, &ServerCounters::clients_connected},
    {"requests", &Impl::requests, &ServerCounters::requests},
    {"reads", &Impl::reads, &ServerCounters::reads},
    {"read_errors", &Impl::read_errors, &ServerCounters::read_errors},
    {"bytes_read", &Impl::bytes_read, &ServerCounters::bytes_read},
    {"direct_reads", &Impl::direct_reads, &ServerCounters::direct_reads},
    {"direct_bytes", &Impl::direct_bytes, &ServerCounters::direct_bytes},
    {"rdma_bytes", &Impl::rdma_bytes, &ServerCounters::rdma_bytes},
    {"bytes_copied", &Impl::bytes_copied, &ServerCounters::bytes_copied},
    {"path_opens", &Impl::path_opens, &ServerCounters::path_opens},
    {"files_refused", &Impl::files_refused, &ServerCounters::files_refused},
    {"protocol_errors", &Impl::protocol_errors, &ServerCounters::protocol_errors},
};

}  // namespace

ServerCounters SideChannelServer::counters() const {
  ServerCounters c;
  for (const CounterRow& row : kCounters) {
    c.*row.snapshot = ((*impl_).*row.live).load(std::memory_order_relaxed);
  }
  return c;
}

Json SideChannelServer::CountersJson() const {
  const ServerCounters c = counters();
  Json out{{"socket", impl_->options.socket_path}};
  for (const CounterRow& row : kCounters) out[row.name] = c.*row.snapshot;
  return out;
}

void SideChannelServer::Impl::Run() {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Client>> order;
  while (!stop.load()) {
    fds.clear();
    order.clear();
    fds.push_back({listen.get(), POLLIN, 0});
    fds.push_back({wake.get(), POLLIN, 0});
    for (auto& [fd, c] : clients) {
      short events = 0;
      {
        MutexLock lock(c->mu);
        // Back-pressure: a client with max_in_flight requests pending, or that does not take its
        // answers, is not read until some complete.
        if (c->in_flight < options.max_in_flight && c->out.size() < kMaxQueuedAnswerBytes) {
          events |= POLLIN;
        }
        if (!c->out.empty()) events |= POLLOUT;
      }
      fds.push_back({fd, events, 0});
      order.push_back(c);
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      REELFS_LOG_ERROR(kSubject, "side channel: poll: {}", std::strerror(errno));
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      uint64_t n;
      (void)!read(wake.get(), &n, sizeof n);
    }
    if ((fds[0].revents & POLLIN) != 0) Accept();
    for (size_t i = 0; i < order.size(); ++i) {
      const short re = fds[i + 2].revents;
      const std::shared_ptr<Client>& c = order[i];
      bool keep = true;
      if (keep && (re & POLLOUT) != 0) keep = WriteTo(*c);
      if (keep && (re & (POLLIN | POLLHUP | POLLERR)) != 0) keep = ReadFrom(c);
      if (keep) {
        // Answers queued by this round's dispatch go out at once when the socket takes them.
        MutexLock lock(c->mu);
        const bool pending = !c->out.empty();
        lock.unlock();
        if (pending) keep = WriteTo(*c);
      }
      if (!keep) Disconnect(fds[i + 2].fd, "closed");
    }
  }
  std::vector<int> all;
  for (auto& [fd, c] : clients) all.push_back(fd);
  for (int fd : all) Disconnect(fd, "server stopping");
}

void SideChannelServer::Impl::Accept() {
  for (;;) {
    UniqueFd fd(accept4(listen.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) return;  // EAGAIN, or a client that went away meanwhile
    auto cred = ReadPeerCredentials(fd.get());
    std::string peer = "unknown peer";
    if (cred.ok()) {
      peer = fmt::format("pid {} uid {} gid {}", cred->pid, cred->uid, cred->gid);
    } else {
      REELFS_LOG_WARN(kSubject, "side channel: peer credentials: {}; OPEN_PATH refused for it",
                      cred.status().ToString());
    }
    // OPEN_FILE is decided by the fd the client passes (the kernel checked its open); OPEN_PATH
    // by these credentials against the mount's modes, as default_permissions would.
    REELFS_LOG_INFO(kSubject, "side channel: client connected: {}", peer);
    const int raw = fd.get();
    auto c = std::make_shared<Client>(live, std::move(fd));
    c->peer = std::move(peer);
    if (cred.ok()) c->cred = std::move(*cred);
    clients.emplace(raw, std::move(c));
    clients_accepted.fetch_add(1, std::memory_order_relaxed);
    clients_connected.fetch_add(1, std::memory_order_relaxed);
  }
}

void SideChannelServer::Impl::Disconnect(int fd, const char* why) {
  auto it = clients.find(fd);
  if (it == clients.end()) return;
  std::shared_ptr<Client> c = std::move(it->second);
  clients.erase(it);
  {
    // From here no callback writes into the client's buffers (the fence).
    MutexLock lock(c->mu);
    c->gone = true;
    c->out.clear();
  }
  c->interrupt->Cancel();  // reads waiting for a restore end now
  std::unordered_map<uint64_t, std::shared_ptr<OpenedFile>> files;
  std::unordered_map<uint64_t, std::shared_ptr<ClientBuffer>> buffers;
  {
    MutexLock lock(c->mu);
    files.swap(c->files);  // released as their last READ finishes, outside the lock
    buffers.swap(c->buffers);
  }
  files.clear();
  buffers.clear();
  c->fds.clear();
  c->socket.Reset();
  clients_connected.fetch_sub(1, std::memory_order_relaxed);
  REELFS_LOG_INFO(kSubject, "side channel: client disconnected ({}): {}", why, c->peer);
}

bool SideChannelServer::Impl::WriteTo(Client& c) {
  MutexLock lock(c.mu);
  while (!c.out.empty()) {
    const ssize_t n = send(c.socket.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

void SideChannelServer::Impl::FailConnection(Client& c, uint64_t tag, int err,
                                             const std::string& text) {
  protocol_errors.fetch_add(1, std::memory_order_relaxed);
  REELFS_LOG_WARN(kSubject, "side channel: {}: {}; closing the connection", c.peer, text);
  auto bytes = protocol::EncodeFrame(Frame{
      tag,
      protocol::Error{static_cast<uint32_t>(err), text.substr(0, protocol::kMaxErrorMessage)}});
  if (bytes.ok()) {
    // Best effort, nonblocking: the connection is closed right after.
    (void)!send(c.socket.get(), bytes->data(), bytes->size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

bool SideChannelServer::Impl::ReadFrom(const std::shared_ptr<Client>& c) {
  uint8_t chunk[16 << 10];
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))];
  iovec iov{chunk, sizeof chunk};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(c->socket.get(), &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  // Take every passed fd at once, so none leaks whatever happens next.
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      c->fds.emplace_back(fd);
    }
  }
  if (n == 0) return false;
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || c->fds.size() > kMaxPendingFds) {
    FailConnection(*c, 0, EPROTO, "too many file descriptors passed");
    return false;
  }
  c->input.insert(c->input.end(), chunk, chunk + n);
  size_t used = 0;
  bool keep = true;
  while (keep && used < c->input.size()) {
    auto step = protocol::DecodeNext(std::span<const uint8_t>(c->input).subspan(used));
    if (!step.ok()) {
      const bool too_long = step.status().message().find("length") != std::string::npos;
      FailConnection(*c, 0, too_long ? EMSGSIZE : EPROTO, std::string(step.status().message()));
      return false;
    }
    if (step->need_more > 0) break;
    used += step->frame_size;
    requests.fetch_add(1, std::memory_order_relaxed);
    keep = Dispatch(c, *step);
  }
  c->input.erase(c->input.begin(), c->input.begin() + static_cast<ptrdiff_t>(used));
  return keep;
}

bool SideChannelServer::Impl::Dispatch(const std::shared_ptr<Client>& c,
                                       const protocol::StreamStep& step) {
  const uint64_t tag = step.header.tag;
  const auto type = step.header.type;
  // Frames that carry an fd take it even when their body is malformed, so the next frame's fd
  // stays its own.
  const bool takes_fd = type == protocol::MessageType::kOpenFile ||
                        (type == protocol::MessageType::kRegisterBuffer && step.frame &&
                         std::get<protocol::RegisterBuffer>(step.frame->message).kind !=
                             protocol::BufferKind::kCudaIpc) ||
                        (type == protocol::MessageType::kRegisterBuffer && !step.frame);
  if (!c->hello) {
    if (!step.frame || !std::holds_alternative<protocol::Hello>(step.frame->message)) {
      FailConnection(*c, tag, EPROTO, "the first message must be HELLO");
      return false;
    }
  }
  {
    MutexLock lock(c->mu);
    ++c->in_flight;
  }
  if (!step.body_status.ok()) {
    if (takes_fd && !c->fds.empty()) c->fds.pop_front();
    Done(*c, tag, -EINVAL);
    return true;
  }
  const protocol::Message& m = step.frame->message;
  if (const auto* hello = std::get_if<protocol::Hello>(&m)) {
    if (c->hello) {
      Done(*c, tag, -EINVAL);  // a second HELLO
      return true;
    }
    c->hello = true;
    (void)hello;
    Answer(*c, Frame{tag, protocol::Hello{protocol::kProtocolVersion,
                                          options.capabilities | protocol::capability::kOpenPath}});
    return true;
  }
  if (std::holds_alternative<protocol::OpenFile>(m)) {
    OpenFile(c, tag);
  } else if (const auto* open_path = std::get_if<protocol::OpenPath>(&m)) {
    OpenPath(c, tag, open_path->path);
  } else if (const auto* read_path = std::get_if<protocol::ReadPath>(&m)) {
    OpenPath(c, tag, read_path->path, *read_path);
  } else if (const auto* close = std::get_if<protocol::CloseFile>(&m)) {
    std::shared_ptr<OpenedFile> released;  // let go outside the lock: it may call Release
    {
      MutexLock lock(c->mu);
      auto it = c->files.find(close->file_id);
      if (it != c->files.end()) {
        released = std::move(it->second);
        c->files.erase(it);
      }
    }
    Done(*c, tag, released != nullptr ? 0 : -EBADF);
  } else if (const auto* reg = std::get_if<protocol::RegisterBuffer>(&m)) {
    RegisterBuffer(c, tag, *reg);
  } else if (const auto* rel = std::get_if<protocol::ReleaseBuffer>(&m)) {
    std::shared_ptr<ClientBuffer> released;
    {
      MutexLock lock(c->mu);
      auto it = c->buffers.find(rel->buffer_id);
      if (it != c->buffers.end()) {
        released = std::move(it->second);
        c->buffers.erase(it);
      }
    }
    Done(*c, tag, released != nullptr ? 0 : -EBADF);
  } else if (const auto* read = std::get_if<protocol::Read>(&m)) {
    StartRead(c, tag, *read);
  } else {
    // DONE and ERROR are the daemon's to send.
    Done(*c, tag, -EINVAL);
  }
  return true;
}

void SideChannelServer::Impl::OpenFile(const std::shared_ptr<Client>& c, uint64_t tag) {
  if (c->fds.empty()) return Done(*c, tag, -EINVAL);
  UniqueFd fd = std::move(c->fds.front());
  c->fds.pop_front();
  auto file = CheckMountFd(fd.get(), options.mount_dev);
  if (!file.ok()) {
    files_refused.fetch_add(1, std::memory_order_relaxed);
    REELFS_LOG_DEBUG(kSubject, "side channel: {}: {}", c->peer, file.status().ToString());
    // The spec's answer for a file that is not the mount's is EPERM, whatever the errno table
    // gives kPermissionDenied.
    return Done(*c, tag,
                file.status().code() == StatusCode::kPermissionDenied
                    ? -EPERM
                    : -static_cast<int64_t>(ErrnoOf(file.status())));
  }
  const uint64_t id = c->next_id++;
  const fuse::InodeId ino = file->ino;
  auto shared_fd = std::make_shared<UniqueFd>(std::move(fd));
  fs.Open(ino, O_RDONLY | (file->nonblock ? O_NONBLOCK : 0), /*pid=*/0,
          [this, c, tag, id, ino, shared_fd](Result<fuse::OpenedFile> opened) {
            if (!opened.ok()) {
              // An inode this mount does not know (forgotten, or another mount's).
              files_refused.fetch_add(1, std::memory_order_relaxed);
              return Done(*c, tag, -EPERM);
            }
            AddFile(c, tag, id, std::move(*shared_fd), ino, opened->fh);
          });
}

void SideChannelServer::Impl::AddFile(const std::shared_ptr<Client>& c, uint64_t tag, uint64_t id,
                                      UniqueFd fd, fuse::InodeId ino, uint64_t fh) {
  auto state = std::make_shared<OpenedFile>(fs, live, std::move(fd), ino, fh);
  {
    MutexLock lock(c->mu);
    if (c->gone) return;  // `state` goes here and releases the handle
    c->files.emplace(id, std::move(state));
  }
  Done(*c, tag, static_cast<int64_t>(id));
}

// OPEN_PATH: the path resolved one Lookup at a time from the root, each directory searchable
// and the file readable by the peer, then one Open. Every Lookup counts a reference, which is
// given back (Forget) once the open is done: the handle pins the file's inode itself.
struct PathOpen : std::enable_shared_from_this<PathOpen> {
  SideChannelServer::Impl* server = nullptr;
  std::shared_ptr<Client> client;
  uint64_t tag = 0;
  uint64_t id = 0;
  std::vector<std::string> parts;
  size_t next = 0;
  fuse::InodeId at = fuse::kRootInode;
  std::vector<fuse::InodeId> looked_up;
  // READ_PATH: the READ to run once open; the file is closed when it is done.
  std::optional<protocol::ReadPath> read;

  void Fail(int err) {
    Forget();
    if (err == EACCES) server->files_refused.fetch_add(1, std::memory_order_relaxed);
    server->Done(*client, tag, -static_cast<int64_t>(err));
  }
  void Forget() {
    for (fuse::InodeId ino : looked_up) server->fs.Forget(ino, 1);
    looked_up.clear();
  }
  // The path of the first `n` components, the dir_cache key.
  std::string Prefix(size_t n) const {
    std::string p;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) p += '/';
      p += parts[i];
    }
    return p;
  }
  // `dir` is the directory `at`: the peer must be able to search it before the next name.
  void Step(const fuse::Attributes& dir) {
    if (!dir.is_dir) return Fail(ENOTDIR);
    if (!MayAccess(*client->cred, dir, X_OK)) return Fail(EACCES);
    if (next + 1 < parts.size()) {
      // A directory component already resolved by an earlier OPEN_PATH: no Lookup.
      std::optional<SideChannelServer::Impl::CachedDir> cached;
      {
        MutexLock lock(server->dir_mu);
        auto it = server->dir_cache.find(Prefix(next + 1));
        if (it != server->dir_cache.end()) cached = it->second;
      }
      if (cached) {
        at = cached->ino;
        ++next;
        return Step(cached->attr);
      }
    }
    auto self = shared_from_this();
    server->fs.Lookup(at, parts[next], [self](Result<fuse::Entry> e) {
      if (!e.ok()) return self->Fail(ErrnoOf(e.status()));
      const bool is_last = self->next + 1 == self->parts.size();
      bool cached = false;
      if (!is_last && e->attr.is_dir) {
        // The cache takes this lookup's reference, unless it is full or holds the path already.
        MutexLock lock(self->server->dir_mu);
        if (self->server->dir_cache.size() < SideChannelServer::Impl::kMaxCachedDirs) {
          cached = self->server->dir_cache
                       .emplace(self->Prefix(self->next + 1),
                                SideChannelServer::Impl::CachedDir{e->attr.ino, e->attr})
                       .second;
        }
      }
      if (!cached) self->looked_up.push_back(e->attr.ino);
      self->at = e->attr.ino;
      if (++self->next < self->parts.size()) return self->Step(e->attr);
      self->OpenLeaf(e->attr);
    });
  }
  void OpenLeaf(const fuse::Attributes& file) {
    if (file.is_dir) return Fail(EISDIR);
    if (!MayAccess(*client->cred, file, R_OK)) return Fail(EACCES);
    auto self = shared_from_this();
    server->fs.Open(file.ino, O_RDONLY, /*pid=*/0,
                    [self, ino = file.ino](Result<fuse::OpenedFile> opened) {
                      if (!opened.ok()) return self->Fail(ErrnoOf(opened.status()));
                      self->Forget();
                      self->server->path_opens.fetch_add(1, std::memory_order_relaxed);
                      if (!self->read) {
                        return self->server->AddFile(self->client, self->tag, self->id, UniqueFd(),
                                                     ino, opened->fh);
                      }
                      // Held by the READ alone: the handle is released when the READ is done.
                      auto state = std::make_shared<OpenedFile>(
                          self->server->fs, self->server->live, UniqueFd(), ino, opened->fh);
                      const protocol::ReadPath& r = *self->read;
                      self->server->ReadInto(self->client, self->tag, std::move(state), r.offset,
                                             r.length, r.buffer_id, r.buffer_offset);
                    });
  }
};

void SideChannelServer::Impl::OpenPath(const std::shared_ptr<Client>& c, uint64_t tag,
                                       const std::string& path,
                                       std::optional<protocol::ReadPath> read) {
  if (!c->cred || !MayUseMount(*c->cred, options.allow_other, owner_uid, owner_gid)) {
    files_refused.fetch_add(1, std::memory_order_relaxed);
    return Done(*c, tag, -EACCES);
  }
  auto parts = SplitMountPath(path);
  if (!parts.ok()) {
    REELFS_LOG_DEBUG(kSubject, "side channel: {}: OPEN_PATH: {}", c->peer,
                     parts.status().ToString());
    return Done(*c, tag, -EINVAL);
  }
  auto op = std::make_shared<PathOpen>();
  op->server = this;
  op->client = c;
  op->tag = tag;
  op->id = c->next_id++;
  op->parts = std::move(*parts);
  op->read = std::move(read);
  fs.GetAttr(fuse::kRootInode, [op](Result<fuse::Attributes> root) {
    if (!root.ok()) return op->Fail(ErrnoOf(root.status()));
    op->Step(*root);
  });
}

void SideChannelServer::Impl::RegisterBuffer(const std::shared_ptr<Client>& c, uint64_t tag,
                                             const protocol::RegisterBuffer& reg) {
  if (reg.kind == protocol::BufferKind::kCudaIpc) {
    auto buffer = CudaIpcBuffer(*c, reg.cuda_ipc_handle, reg.length);
    if (!buffer.ok()) return Done(*c, tag, RefusalErrno(buffer.status()));
    return AddBuffer(*c, tag, std::move(*buffer));
  }
  if (c->fds.empty()) return Done(*c, tag, -EINVAL);
  UniqueFd fd = std::move(c->fds.front());
  c->fds.pop_front();
  auto buffer = reg.kind == protocol::BufferKind::kMemfd
                    ? MemfdBuffer(*c, std::move(fd), reg.length)
                    : DmaBufBuffer(*c, std::move(fd), reg.length);
  if (!buffer.ok()) {
    REELFS_LOG_DEBUG(kSubject, "side channel: {}: {}", c->peer, buffer.status().ToString());
    return Done(*c, tag, RefusalErrno(buffer.status()));
  }
  AddBuffer(*c, tag, std::move(*buffer));
}

void SideChannelServer::Impl::AddBuffer(Client& c, uint64_t tag,
                                        std::shared_ptr<ClientBuffer> buffer) {
  const uint64_t id = c.next_id++;
  {
    MutexLock lock(c.mu);
    c.buffers.emplace(id, std::move(buffer));
  }
  Done(c, tag, static_cast<int64_t>(id));
}

Result<std::shared_ptr<ClientBuffer>> SideChannelServer::Impl::CudaIpcBuffer(
    const Client& c, const std::array<uint8_t, protocol::kCudaIpcHandleSize>& handle,
    uint64_t length) {
  if (options.gpu_importer == nullptr) {
    REELFS_LOG_INFO(kSubject,
                    "side channel: {}: a CUDA IPC buffer, and this reelfs was built without CUDA; "
                    "answering EOPNOTSUPP (register a dma-buf of the memory, or stage)",
                    c.peer);
    return Status::Unimplemented("built without CUDA");
  }
  auto imported = options.gpu_importer->ImportCudaIpc(handle, length);
  if (!imported.ok()) {
    // One line per refusal, with the reason: the client sees only the errno.
    REELFS_LOG_INFO(
        kSubject, "side channel: {}: a {}-byte CUDA IPC buffer: {}; answering {}", c.peer, length,
        imported.status().ToString(),
        imported.status().code() == StatusCode::kInvalidArgument ? "EINVAL" : "EOPNOTSUPP");
    return imported.status();
  }
  auto buffer = std::make_shared<ClientBuffer>();
  buffer->size = length;
  buffer->region = (*imported)->region();
  buffer->gpu = std::move(*imported);
  REELFS_LOG_INFO(kSubject, "side channel: {}: a {}-byte CUDA IPC buffer registered", c.peer,
                  length);
  return buffer;
}

Result<std::shared_ptr<ClientBuffer>> SideChannelServer::Impl::MemfdBuffer(const Client& c,
                                                                           UniqueFd fd,
                                                                           uint64_t length) {
  auto buffer = std::make_shared<ClientBuffer>();
  REELFS_ASSIGN_OR_RETURN(buffer->mapped, MapSealedMemfd(fd.get(), length));
  buffer->size = length;
  RegisterMapping(c, *buffer, fmt::format("{}-byte memfd", length));
  return buffer;
}

Result<std::shared_ptr<ClientBuffer>> SideChannelServer::Impl::DmaBufBuffer(const Client& c,
                                                                            UniqueFd fd,
                                                                            uint64_t length) {
  REELFS_ASSIGN_OR_RETURN(DmaBufInfo info, CheckDmaBuf(fd.get(), length));
  const std::string what = fmt::format("{}-byte dma-buf of {}", length, info.exporter);
  auto buffer = std::make_shared<ClientBuffer>();
  buffer->size = length;
  if (options.registrar != nullptr) {
    // Any page-aligned base will do for the remote addresses; not 0, so none of them is null.
    constexpr uint64_t kIova = 1ull << 40;
    auto region = options.registrar->Register(
        rdmaio::DmaBufMemory{.fd = fd.get(), .offset = 0, .length = length, .iova = kIova});
    if (region.ok()) {
      REELFS_LOG_INFO(kSubject, "side channel: {}: {} registered with the data channel", c.peer,
                      what);
      buffer->region = std::move(*region);
      buffer->dmabuf = std::move(fd);
      return buffer;
    }
    REELFS_LOG_INFO(kSubject, "side channel: {}: {}: {}; stepping down to its CPU mapping", c.peer,
                    what, region.status().ToString());
  }
  auto mapped = MapDmaBuf(fd.get(), length);
  if (!mapped.ok()) {
    REELFS_LOG_INFO(kSubject,
                    "side channel: {}: {}: {}; answering EOPNOTSUPP (the client stages through "
                    "host memory)",
                    c.peer, what, mapped.status().ToString());
    return mapped.status();
  }
  buffer->mapped = std::move(*mapped);
  buffer->dmabuf = std::move(fd);
  RegisterMapping(c, *buffer, what + "'s CPU mapping");
  return buffer;
}

void SideChannelServer::Impl::RegisterMapping(const Client& c, ClientBuffer& buffer,
                                              std::string_view what) {
  if (options.registrar == nullptr) return;
  // Registered once, here, so the gateway can write READs straight into it over RDMA.
  auto region = options.registrar->Register(rdmaio::HostMemory{buffer.host()});
  if (!region.ok()) {
    REELFS_LOG_WARN(kSubject,
                    "side channel: {}: registering the {} with the data channel: {}; its READs "
                    "are copied by the daemon",
                    c.peer, what, region.status().ToString());
    return;
  }
  buffer.region = std::move(*region);
}

void SideChannelServer::Impl::StartRead(const std::shared_ptr<Client>& c, uint64_t tag,
                                        const protocol::Read& read) {
  std::shared_ptr<OpenedFile> file;
  {
    MutexLock lock(c->mu);
    auto f = c->files.find(read.file_id);
    if (f != c->files.end()) file = f->second;
  }
  if (file == nullptr) {
    read_errors.fetch_add(1, std::memory_order_relaxed);
    return Done(*c, tag, -EBADF);
  }
  ReadInto(c, tag, std::move(file), read.offset, read.length, read.buffer_id, read.buffer_offset);
}

void SideChannelServer::Impl::ReadInto(const std::shared_ptr<Client>& c, uint64_t tag,
                                       std::shared_ptr<OpenedFile> file, uint64_t offset,
                                       uint64_t length, uint64_t buffer_id,
                                       uint64_t buffer_offset) {
  auto op = std::make_shared<ReadOp>();
  {
    MutexLock lock(c->mu);
    auto b = c->buffers.find(buffer_id);
    if (b == c->buffers.end()) {
      lock.unlock();
      read_errors.fetch_add(1, std::memory_order_relaxed);
      return Done(*c, tag, -EBADF);
    }
    const uint64_t size = b->second->size;
    // No overflow: the codec refused buffer_offset + length overflowing u64.
    if (buffer_offset > size || length > size - buffer_offset) {
      lock.unlock();
      read_errors.fetch_add(1, std::memory_order_relaxed);
      return Done(*c, tag, -EINVAL);
    }
    op->buffer = b->second;
  }
  op->file = std::move(file);
  op->server = this;
  op->client = c;
  op->tag = tag;
  op->offset = offset;
  op->length = length;
  op->buffer_offset = buffer_offset;
  if (op->buffer->cpu_sync()) {
    Status synced = SyncDmaBufForCpuWrite(op->buffer->dmabuf.get(), /*start=*/true);
    if (!synced.ok()) {
      read_errors.fetch_add(1, std::memory_order_relaxed);
      return Done(*c, tag, -static_cast<int64_t>(ErrnoOf(synced)));
    }
  }
  // A buffer only the NIC can write takes the whole READ as one fetch into its window.
  if (op->buffer->host().empty() ||
      (options.direct_read_min != 0 && length >= options.direct_read_min)) {
    op->Direct();
  } else {
    op->Pump();
  }
}

}  // namespace reelfs::api

// SideChannelServer: the daemon's end of the side channel (docs/protocols/side-channel.md). It
// listens on one Unix stream socket per mount; each client proves access to a file by passing an
// fd opened through the mount (the fd check, buffer_check.h) or names it by path (OPEN_PATH,
// READ_PATH: its credentials checked as default_permissions would, path_access.h), registers its
// own buffers (a sealed
// memfd today, buffer_check.h) and pipelines READs that run through the mount's FileSystem, so
// they follow the mount's semantics exactly (--offline modes, ESTALE on a changed ETag, the one
// errno table). A READ of at least `direct_read_min` bytes is one FileSystem::ReadTo: a ranged GET
// whose body the S3 client hands straight to the client's buffer (one copy, as curl makes); a
// shorter one goes through the prefetcher (FileSystem::Read, which a small file's open has already
// started) and is copied once from its buffers.
//
// Fencing: a client's buffers are unmapped only after every READ into them has completed, and no
// byte is written into a buffer after its client has disconnected (the write happens under the
// client's lock, which the disconnect takes to mark the client gone).
//
// Thread-safety: Start and the destructor from one thread; counters() from any thread. The server
// runs one event-loop thread (accept, socket reads and writes, request dispatch); FileSystem
// callbacks may run on any thread and only copy bytes and queue answers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <sys/types.h>

#include "api/protocol/messages.h"
#include "api/server/gpu_importer.h"
#include "common/json.h"
#include "common/result.h"
#include "fuse/core/filesystem.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::api {

struct ServerOptions {
  // Where to listen: an absolute path (at most 107 bytes). A stale socket there is replaced; any
  // other file there is an error. The socket is removed when the server stops.
  std::string socket_path;
  // st_dev of the mount (fuse::MountDeviceNumber reads it from mountinfo): an OPEN_FILE fd must
  // be on this device.
  dev_t mount_dev = 0;
  // Socket mode 0666 when the mount has allow_other, else 0600.
  bool allow_other = false;
  // Requests in flight per client before the server stops reading that client (back-pressure).
  size_t max_in_flight = 1024;
  // What DONE reports as the path of a successful READ: the mount's data channel (kRdma with
  // --rdma, else kHttp).
  protocol::DonePath data_path = protocol::DonePath::kHttp;
  // Offered in the HELLO answer (protocol::capability bits).
  uint32_t capabilities = 0;
  // READs at least this long go straight into the client's buffer (FileSystem::ReadTo): over the
  // data channel into the buffer's registration when there is a `registrar`, else from a ranged
  // GET's body; 0: never (every READ goes through the prefetcher and is copied).
  uint64_t direct_read_min = 1 << 20;
  // The mount's data channel's registrar (--rdma), or null: memfd buffers are registered with it
  // at REGISTER_BUFFER, so the gateway can write READs into them (docs/protocols/side-channel.md
  // section 4). A buffer that cannot be registered is used as without one (logged).
  rdmaio::MemoryRegistrar* registrar = nullptr;
  // Takes `cuda_ipc` buffers, or null (reelfs built without CUDA): they are answered EOPNOTSUPP.
  // Must outlive the server.
  GpuImporter* gpu_importer = nullptr;
};

// Totals since Start.
struct ServerCounters {
  uint64_t clients_accepted = 0;
  uint64_t clients_connected = 0;  // now
  uint64_t requests = 0;           // frames received and dispatched
  uint64_t reads = 0;              // READs answered with a byte count
  uint64_t read_errors = 0;        // READs answered with -errno
  uint64_t bytes_read = 0;         // bytes written into client buffers
  uint64_t direct_reads = 0;       // READs answered through FileSystem::ReadTo
  uint64_t direct_bytes = 0;       // their bytes (part of bytes_read)
  uint64_t rdma_bytes = 0;         // written by the gateway over RDMA straight into client buffers
  uint64_t bytes_copied = 0;       // copied into client buffers by the daemon (or its channel's
                                   // HTTP fallback): bytes_read - rdma_bytes
  uint64_t path_opens = 0;         // files opened by OPEN_PATH or READ_PATH
  uint64_t files_refused = 0;      // OPEN_FILE answered -EPERM, OPEN_PATH/READ_PATH -EACCES
  uint64_t protocol_errors = 0;    // connections closed with ERROR
};

class SideChannelServer {
 public:
  // Binds and listens, then starts the event loop. `fs` must outlive the server.
  static Result<std::unique_ptr<SideChannelServer>> Start(fuse::FileSystem& fs,
                                                          ServerOptions options);
  // Stops accepting, disconnects every client (fenced as above), waits for every FileSystem
  // callback still owed and removes the socket.
  ~SideChannelServer();
  SideChannelServer(const SideChannelServer&) = delete;
  SideChannelServer& operator=(const SideChannelServer&) = delete;

  const std::string& socket_path() const;
  ServerCounters counters() const;
  // counters() as the "side_channel" member of user.reelfs.metrics.
  Json CountersJson() const;

  struct Impl;  // opaque; public only so the implementation's helpers can name it

 private:
  explicit SideChannelServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reelfs::api

// RcServer: reelfs-gateway's side of S3 over RDMA, hipobj-rc-v2 over RC queue pairs
// (docs/protocols/rdma.md §2.3, §6; PUT: docs/protocols/rdma-put.md). Built only with rdma-core
// (target reelfs_gateway_rdma).
//
//   POST /.hipobj-rc/prepare  decodes the client's token, creates a QP on the gateway's device,
//       brings it up by hand towards the client's (qpn, psn, GID) and answers with its own token,
//       session, psn and qpn. The prepared request (op, target, offset, size) is kept; a PUT's
//       target is checked first like the PUT itself (RdmaPutPlanner; > 5 GiB: 413).
//   POST /.hipobj-rc/ready    runs the prepared transfer. GET: reads the range into a registered
//       staging buffer, RDMA-WRITEs it into the client's window, ends with a zero-length WRITE
//       with immediate (the cookie's low 32 bits) and, once every write has completed, answers
//       with bytes-transferred, the cookie echo, the ETag and x-amz-rdma-object-size. PUT:
//       RDMA-READs the client's window through the staging buffer into a temp file (MD5 on the
//       way), stores it (PutObject or UploadPart) and answers with the PUT's ETag, the cookie
//       echo and bytes-transferred. The session stays for reuse.
//   GET with x-amz-rdma-token (RC, 88 hex) + x-amz-rdma-session + x-amz-rdma-cookie: the same
//       transfer for a ranged GET on an established session (our extension, §6); the plain
//       answer's status and headers follow with an empty body, x-amz-rdma-reply and
//       x-amz-rdma-bytes-transferred.
//   PUT with x-amz-rdma-token + session + cookie + x-amz-rdma-size and an empty body: the same
//       PUT transfer on an established session (our extension, rdma-put.md).
//   POST /.hipobj-rc/cancel   drops a session.
// Transfers run on worker threads (`workers`), each with its own staging slot; the io thread only
// parses and returns a deferred Response, so it never waits on a completion.
//
// Sessions (SessionTable): idle longer than `session_idle` they are dropped (QP destroyed) by a
// reaper thread and on each PREPARE; at `max_sessions` a PREPARE drops the least recently used
// idle session; a session in a transfer is never dropped that way.
//
// `emulate` makes the data GETs answer the way another server would (the reply classifier's rows,
// docs/protocols/rdma.md §3), and `fault` injects failures into GETs and PUTs, for the client's
// fallback tests.
//
// Thread-safety: Control, ServeGet and ServePut are called from every io thread at once (the
// session table has its own lock; `mutex_` guards the job queue; a session runs one transfer at a
// time). Lock order: mutex_ and the table's lock are never held together.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "common/unique_fd.h"
#include "gateway/rdma/hook.h"
#include "gateway/rdma/session_table.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/rc_queue_pair.h"
#include "rdmaio/verbs/registrar.h"
#include "rdmaio/wire/rc_control.h"

namespace reelfs::gateway {

class Store;

// Data-GET answers of other servers, for the client's classifier (docs/protocols/rdma.md §3).
enum class RdmaEmulation : uint8_t {
  kNone,               // hipobj-rc-v2 as specified, plus session GETs
  kVgwRdma,            // HTTP 500 InternalError (vgwrdma's answer to any RDMA problem)
  kNooBaa,             // HTTP 501 S3RdmaNotSupported (RDMA off)
  kAiStor,             // x-amz-rdma-reply: 501 with an S3 error, HTTP 501 (fabric not set up)
  kCephRgw,            // token ignored: the object in the body, no reply header (RDMA off)
  kDraftSpec,          // x-amz-rdma-reply: 501 and the object in the body
  kHipobjUnsupported,  // PREPARE: 501 + x-amz-rdma-protocol-status: unsupported
};
Result<RdmaEmulation> ParseRdmaEmulation(std::string_view name);

enum class RdmaFault : uint8_t {
  kNone,
  kQpError,  // data GETs, PUTs: the session QP is put in ERR first (transfer fails: 500)
  kTimeout,  // data GETs, PUTs: the transfer is held back `fault_delay` (the client times out)
};
Result<RdmaFault> ParseRdmaFault(std::string_view name);

struct RcServerOptions {
  std::string device;  // "" = the first device with an active port
  RdmaEmulation emulate = RdmaEmulation::kNone;
  RdmaFault fault = RdmaFault::kNone;
  std::chrono::milliseconds fault_delay{30'000};
  size_t staging_bytes = 4 << 20;  // per worker; a transfer moves through it in pieces
  int workers = 2;
  size_t max_sessions = 256;
  // Idle sessions older than this are dropped (clients that vanish never CANCEL); 0: never.
  std::chrono::milliseconds session_idle{600'000};
  std::chrono::milliseconds completion_timeout{10'000};  // per work completion
};

class RcServer final : public RdmaHook {
 public:
  static Result<std::unique_ptr<RcServer>> Create(RcServerOptions options, Store& store);
  ~RcServer() override;

  http::Response Control(const http::Request& request, std::string_view op,
                         const RdmaPutPlanner& plan_put) override;
  http::Response ServeGet(const http::Request& request, http::Response plain) override;
  http::Response ServePut(const http::Request& request, uint64_t size,
                          RdmaPutCommit commit) override;

  // "rxe0 port 1", for the start-up log line.
  std::string Describe() const;

 private:
  struct Session;
  struct Job;

  RcServer(RcServerOptions options, Store& store)
      : options_(std::move(options)),
        store_(store),
        sessions_({.max_sessions = options_.max_sessions, .idle_timeout = options_.session_idle},
                  RealClock()) {}

  http::Response Prepare(const http::Request& request, const RdmaPutPlanner& plan_put);
  http::Response Ready(const http::Request& request);
  http::Response Cancel(const http::Request& request);
  // Queues `job` for a worker; the returned response is answered when it is done.
  http::Response Defer(std::shared_ptr<Job> job);
  void RunWorker(size_t index);
  void RunReaper();
  // GET: moves the job's range into the client's window. Returns the bytes moved.
  Result<uint64_t> Transfer(Job& job, size_t worker);
  // PUT: moves the client's window into the job's temp file, hashing it. Returns the hex MD5.
  Result<std::string> TransferIn(Job& job, size_t worker);
  // A PUT job from start to answer (transfer, store, reply headers); *healthy: the QP is fine.
  http::Response RunPut(Job& job, size_t worker, bool* healthy);
  std::shared_ptr<Session> TakeSession(const std::string& id, Status* why);
  void ReturnSession(const std::shared_ptr<Session>& session, bool healthy);

  const RcServerOptions options_;
  Store& store_;
  rdmaio::verbs::DevicePort where_;
  std::shared_ptr<rdmaio::verbs::ProtectionDomain> pd_;
  std::unique_ptr<rdmaio::verbs::VerbsRegistrar> registrar_;
  std::vector<std::shared_ptr<rdmaio::verbs::VerbsRegion>> staging_;  // one per worker
  SessionTable<Session> sessions_;

  Mutex mutex_;
  CondVar wake_;         // workers: a job or stopping_
  CondVar reaper_wake_;  // the reaper: stopping_
  std::deque<std::shared_ptr<Job>> jobs_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;
  std::thread reaper_;
};

}  // namespace reelfs::gateway

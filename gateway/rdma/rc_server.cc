#include "gateway/rdma/rc_server.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "common/mutex.h"
#include "common/s3_error_table.h"
#include "gateway/store/store.h"
#include "rdmaio/verbs/verbs_status.h"
#include "rdmaio/wire/rdma_headers.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

namespace wire = rdmaio::wire;
namespace verbs = rdmaio::verbs;

constexpr std::string_view kLog = "gateway.rdma";
// Our extension to GET READY replies (rdma-put.md, protocol item 4): the whole object's size, so
// the client knows it without a HEAD.
constexpr std::string_view kObjectSizeHeader = "x-amz-rdma-object-size";
// How often the reaper looks for idle sessions: a fraction of the idle limit (a session lives at
// most 1.25 x session_idle), and at least once a minute so a long limit still reaps in time.
constexpr std::chrono::milliseconds kMaxReapInterval{60'000};

http::Response ErrorAnswer(int status, std::string_view code, std::string_view message) {
  http::Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/xml");
  r.body = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message>"
      "</Error>",
      code, message);
  r.log_context = fmt::format("rdma={}", code);
  return r;
}

http::Response EmptyAnswer(int status, wire::HeaderList headers) {
  http::Response r;
  r.status = status;
  r.headers = std::move(headers);
  return r;
}

// A hex value of a request header (optional 0x), non-zero; 0 when missing or malformed.
uint64_t HexHeader(const http::Request& request, std::string_view name) {
  const std::string* value = request.Find(name);
  if (value == nullptr || value->empty() || value->size() > 18) return 0;
  std::string_view text = *value;
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
    return 0;
  }
  return std::strtoull(std::string(text).c_str(), nullptr, 16);
}

Status ReadFully(int fd, std::span<std::byte> into, uint64_t offset) {
  size_t done = 0;
  while (done < into.size()) {
    const ssize_t n =
        ::pread(fd, into.data() + done, into.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read object");
    if (n == 0) return Status::DataLoss("object shorter than its catalog size");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Result<RdmaEmulation> ParseRdmaEmulation(std::string_view name) {
  if (name == "none" || name.empty()) return RdmaEmulation::kNone;
  if (name == "vgwrdma") return RdmaEmulation::kVgwRdma;
  if (name == "noobaa") return RdmaEmulation::kNooBaa;
  if (name == "aistor") return RdmaEmulation::kAiStor;
  if (name == "ceph-rgw") return RdmaEmulation::kCephRgw;
  if (name == "draft-spec") return RdmaEmulation::kDraftSpec;
  if (name == "hipobj-unsupported") return RdmaEmulation::kHipobjUnsupported;
  return Status::InvalidArgument(fmt::format(
      "unknown RDMA emulation '{}' (none, vgwrdma, noobaa, aistor, ceph-rgw, draft-spec, "
      "hipobj-unsupported)",
      name));
}

Result<RdmaFault> ParseRdmaFault(std::string_view name) {
  if (name == "none" || name.empty()) return RdmaFault::kNone;
  if (name == "qp-error") return RdmaFault::kQpError;
  if (name == "timeout") return RdmaFault::kTimeout;
  return Status::InvalidArgument(
      fmt::format("unknown RDMA fault '{}' (none, qp-error, timeout)", name));
}

struct RcServer::Session {
  std::string id;
  std::unique_ptr<verbs::RcQueuePair> qp;
  wire::RcPrepareRequest prepared;
  RdmaTarget target;
  // A prepared PUT's store step, taken by its READY (one READY per prepared PUT).
  RdmaPutCommit put_commit;
};

struct RcServer::Job {
  std::shared_ptr<Session> session;
  bool ready = false;  // READY (answer: RcReadyReply) or a session GET (answer: `plain`)
  // A PUT (READY or session PUT): `length` bytes are RDMA-READ from the client's window into a
  // temp file and handed to `commit`.
  RdmaPutCommit commit;
  uint64_t object_size = 0;  // GET READY: the whole object's size (x-amz-rdma-object-size)
  // The bytes: READY reads `fd` from `file_offset`; a GET reads its answer's body source.
  UniqueFd fd;
  uint64_t file_offset = 0;
  std::unique_ptr<http::BodySource> source;
  uint64_t length = 0;
  // The client's window.
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t cookie = 0;
  std::string etag;
  http::Response plain;    // a GET's answer, body removed
  TmpFile* tmp = nullptr;  // a PUT's temp file, while RunPut transfers into it
  RdmaFault fault = RdmaFault::kNone;
  http::ResponseSink sink;
};

Result<std::unique_ptr<RcServer>> RcServer::Create(RcServerOptions options, Store& store) {
  if (options.workers < 1) return Status::InvalidArgument("RDMA workers must be at least 1");
  std::unique_ptr<RcServer> self(new RcServer(std::move(options), store));
  REELFS_ASSIGN_OR_RETURN(self->where_, verbs::FindActivePort(self->options_.device));
  REELFS_ASSIGN_OR_RETURN(self->pd_, verbs::ProtectionDomain::Open(self->where_));
  self->registrar_ = std::make_unique<verbs::VerbsRegistrar>(self->pd_);
  for (int i = 0; i < self->options_.workers; ++i) {
    REELFS_ASSIGN_OR_RETURN(auto region,
                            self->registrar_->AllocateArena(self->options_.staging_bytes));
    self->staging_.push_back(std::move(region));
  }
  for (int i = 0; i < self->options_.workers; ++i) {
    self->workers_.emplace_back([raw = self.get(), i] { raw->RunWorker(static_cast<size_t>(i)); });
  }
  if (self->options_.session_idle.count() > 0) {
    self->reaper_ = std::thread([raw = self.get()] { raw->RunReaper(); });
  }
  return self;
}

RcServer::~RcServer() {
  std::deque<std::shared_ptr<Job>> left;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    left.swap(jobs_);
  }
  wake_.notify_all();
  reaper_wake_.notify_all();
  for (auto& t : workers_) t.join();
  if (reaper_.joinable()) reaper_.join();
  for (auto& job : left) job->sink(ErrorAnswer(503, "SlowDown", "gateway stopping"));
}

std::string RcServer::Describe() const {
  return fmt::format("{} port {}", where_.device, where_.port);
}

void RcServer::RunReaper() {
  const auto interval = std::min(
      kMaxReapInterval, std::max(options_.session_idle / 4, std::chrono::milliseconds(100)));
  MutexLock lock(mutex_);
  while (!reaper_wake_.wait_for(lock, interval, [this]() REQUIRES(mutex_) { return stopping_; })) {
    lock.unlock();
    // Destroyed here, outside every lock: ibv_destroy_qp is a system call.
    const size_t dropped = sessions_.ReapIdle().size();
    if (dropped > 0) {
      REELFS_LOG_INFO(kLog, "dropped {} RDMA session(s) idle for over {} ms", dropped,
                      options_.session_idle.count());
    }
    lock.lock();
  }
}

http::Response RcServer::Control(const http::Request& request, std::string_view op,
                                 const RdmaPutPlanner& plan_put) {
  if (request.method != "POST") {
    return ErrorAnswer(405, "MethodNotAllowed", "hipobj-rc-v2 control requests are POSTs");
  }
  if (op == "prepare") return Prepare(request, plan_put);
  if (op == "ready") return Ready(request);
  if (op == "cancel") return Cancel(request);
  return ErrorAnswer(404, "NoSuchKey", "unknown hipobj-rc-v2 control request");
}

http::Response RcServer::Prepare(const http::Request& request, const RdmaPutPlanner& plan_put) {
  if (options_.emulate == RdmaEmulation::kHipobjUnsupported) {
    http::Response r = ErrorAnswer(501, "NotImplemented", "hipobj-rc-v2 is not supported");
    r.headers.emplace_back(std::string(wire::header::kProtocolStatus), "unsupported");
    return r;
  }
  Result<wire::RcPrepareRequest> prepared = wire::DecodeRcPrepare(request.headers);
  if (!prepared.ok()) {
    return ErrorAnswer(400, "InvalidRDMAToken", prepared.status().message());
  }
  Result<RdmaTarget> target = ParseRdmaTarget(prepared->target);
  if (!target.ok()) return ErrorAnswer(400, "InvalidArgument", target.status().message());
  auto session = std::make_shared<Session>();
  if (prepared->op == wire::RcOp::kPut) {
    // Everything a PUT would be refused for is refused now, before a QP exists: the client then
    // sends the body over HTTP or not at all, and nothing is stored.
    RdmaPutPlan plan = plan_put(request, *target, prepared->size);
    if (auto* refused = std::get_if<http::Response>(&plan)) return std::move(*refused);
    session->put_commit = std::get<RdmaPutCommit>(std::move(plan));
  } else if (target->is_part()) {
    return ErrorAnswer(400, "InvalidArgument", "a GET names an object, not a part");
  }
  if (prepared->op == wire::RcOp::kPut && prepared->offset != 0) {
    return ErrorAnswer(400, "InvalidArgument", "a PUT's x-amz-rdma-offset must be 0");
  }
  session->target = std::move(*target);
  session->prepared = std::move(*prepared);
  // Lazily too: a PREPARE is when a full table would hurt.
  sessions_.ReapIdle();
  const wire::RcToken& client = session->prepared.token;
  auto qp = verbs::RcQueuePair::Create(pd_, where_.port);
  if (!qp.ok()) return ErrorAnswer(503, "SlowDown", qp.status().message());
  Status connected = (*qp)->Connect(verbs::RcEndpoint{.qpn = client.qpn,
                                                      .psn = session->prepared.psn,
                                                      .gid = client.gid,
                                                      .port = client.port,
                                                      .lid = client.lid});
  if (!connected.ok()) return ErrorAnswer(400, "InvalidRDMAToken", connected.message());
  session->qp = std::move(qp).value();
  session->id = sessions_.NewId();
  std::vector<std::shared_ptr<Session>> dropped;  // destroyed on return, outside the table's lock
  if (Status st = sessions_.Insert(session->id, session, &dropped); !st.ok()) {
    return ErrorAnswer(503, "SlowDown", st.message());
  }
  if (!dropped.empty()) {
    REELFS_LOG_DEBUG(kLog, "PREPARE {}: dropped least recently used idle session {}", session->id,
                     dropped.front()->id);
  }
  const verbs::RcEndpoint& local = session->qp->local();
  const verbs::VerbsRegion& staging = *staging_.front();
  Result<wire::HeaderList> headers =
      wire::EncodeRcPrepareReply({.server_token = {.transport = wire::RcTransport::kRc,
                                                   .qpn = local.qpn,
                                                   .gid = local.gid,
                                                   .rkey = staging.rkey(),
                                                   .addr = staging.remote_addr(),
                                                   .length = staging.length(),
                                                   .port = local.port,
                                                   .lid = local.lid},
                                  .session = session->id,
                                  .psn = local.psn,
                                  .qpn = local.qpn,
                                  .mr_addr = staging.remote_addr(),
                                  .mr_rkey = staging.rkey()});
  if (!headers.ok()) return ErrorAnswer(500, "InternalError", headers.status().message());
  REELFS_LOG_DEBUG(kLog, "PREPARE {} ({}): client qpn {:#x}, ours {:#x}", session->id,
                   session->prepared.op == wire::RcOp::kPut ? "PUT" : "GET", client.qpn, local.qpn);
  http::Response r = EmptyAnswer(200, std::move(*headers));
  r.log_context = "op=RdmaPrepare session=" + session->id;
  return r;
}

std::shared_ptr<RcServer::Session> RcServer::TakeSession(const std::string& id, Status* why) {
  Result<std::shared_ptr<Session>> taken = sessions_.Take(id);
  if (!taken.ok()) {
    *why = taken.status();
    return nullptr;
  }
  return std::move(taken).value();
}

void RcServer::ReturnSession(const std::shared_ptr<Session>& session, bool healthy) {
  // A dropped session's QP is destroyed when the last reference goes (the caller's job).
  sessions_.Return(session->id, healthy);
}

http::Response RcServer::Ready(const http::Request& request) {
  Result<wire::RcReadyRequest> ready = wire::DecodeRcReady(request.headers);
  if (!ready.ok()) return ErrorAnswer(400, "InvalidArgument", ready.status().message());
  Status why;
  std::shared_ptr<Session> session = TakeSession(ready->session, &why);
  if (!session) {
    return why.code() == StatusCode::kNotFound ? ErrorAnswer(404, "NoSuchUpload", why.message())
                                               : ErrorAnswer(503, "SlowDown", why.message());
  }
  const wire::RcPrepareRequest& prepared = session->prepared;
  auto refuse = [&](http::Response r) {
    ReturnSession(session, true);
    return r;
  };
  if (ready->cookie != prepared.cookie) {
    return refuse(ErrorAnswer(400, "InvalidArgument", "cookie does not match PREPARE"));
  }
  if (prepared.op == wire::RcOp::kPut) {
    if (!session->put_commit) {
      return refuse(ErrorAnswer(400, "InvalidArgument",
                                "this PUT session's READY already ran: send a session PUT"));
    }
    auto job = std::make_shared<Job>();
    job->session = session;
    job->ready = true;
    job->commit = std::move(session->put_commit);
    session->put_commit = {};
    job->length = prepared.size;
    job->remote_addr = ready->mr_addr;
    job->rkey = ready->mr_rkey;
    job->cookie = ready->cookie;
    job->fault = options_.fault;
    return Defer(std::move(job));
  }
  auto opened = store_.Open(session->target.bucket, session->target.key);
  if (!opened.ok()) {
    return refuse(opened.status().code() == StatusCode::kNotFound
                      ? ErrorAnswer(404, "NoSuchKey", "The specified key does not exist.")
                      : ErrorAnswer(500, "InternalError", opened.status().message()));
  }
  const ObjectRecord& rec = opened->record;
  if (rec.archive && rec.archive->state == ArchiveState::kOffline) {
    return refuse(ErrorAnswer(403, kS3InvalidObjectState,
                              "The operation is not valid for the object's storage class"));
  }
  if (prepared.offset >= rec.size) {
    return refuse(ErrorAnswer(416, "InvalidRange", "The requested range is not satisfiable"));
  }
  auto job = std::make_shared<Job>();
  job->session = session;
  job->ready = true;
  job->fd = std::move(opened->fd);
  job->file_offset = prepared.offset;
  job->length = std::min(prepared.size, rec.size - prepared.offset);
  job->remote_addr = ready->mr_addr;
  job->rkey = ready->mr_rkey;
  job->cookie = ready->cookie;
  job->etag = rec.etag;
  job->object_size = rec.size;
  if (job->length > prepared.token.length) {
    return refuse(ErrorAnswer(400, "InvalidArgument", "size is larger than the window"));
  }
  return Defer(std::move(job));
}

http::Response RcServer::Cancel(const http::Request& request) {
  Result<wire::RcCancelRequest> cancel = wire::DecodeRcCancel(request.headers);
  if (!cancel.ok()) return ErrorAnswer(400, "InvalidArgument", cancel.status().message());
  // A transfer running on it holds its own reference and ends first.
  std::shared_ptr<Session> gone = sessions_.Erase(cancel->session);
  http::Response r = EmptyAnswer(204, {});
  r.log_context = "op=RdmaCancel session=" + cancel->session;
  return r;
}

http::Response RcServer::ServeGet(const http::Request& request, http::Response plain) {
  if ((plain.status != 200 && plain.status != 206) || !plain.stream || plain.omit_body) {
    return plain;  // errors, empty objects and HEADs are not RDMA's business
  }
  switch (options_.emulate) {
    case RdmaEmulation::kNone:
      break;
    case RdmaEmulation::kVgwRdma:
      return ErrorAnswer(500, "InternalError", "RDMA transfer failed (emulating vgwrdma)");
    case RdmaEmulation::kNooBaa:
      return ErrorAnswer(501, "S3RdmaNotSupported", "RDMA is not enabled (emulating NooBaa)");
    case RdmaEmulation::kAiStor: {
      http::Response r = ErrorAnswer(501, "NotImplemented", "RDMA fabric not configured");
      r.headers.emplace_back(std::string(wire::header::kReply), "501");
      return r;
    }
    case RdmaEmulation::kCephRgw:
      return plain;
    case RdmaEmulation::kDraftSpec:
      plain.headers.emplace_back(std::string(wire::header::kReply), "501");
      return plain;
    case RdmaEmulation::kHipobjUnsupported: {
      http::Response r = ErrorAnswer(501, "NotImplemented", "hipobj-rc-v2 is not supported");
      r.headers.emplace_back(std::string(wire::header::kProtocolStatus), "unsupported");
      return r;
    }
  }
  const std::string* token_text = request.Find(wire::header::kToken);
  Result<wire::RcToken> token = wire::DecodeRcToken(token_text ? *token_text : "");
  if (!token.ok()) {
    return ErrorAnswer(400, "InvalidRDMAToken",
                       token_text && token_text->size() == wire::kDcTokenLength
                           ? "cuObject DC tokens need mlx5 DC; this gateway serves RC"
                           : token.status().message());
  }
  const std::string* session_id = request.Find(wire::header::kSession);
  const uint64_t cookie = HexHeader(request, wire::header::kCookie);
  if (session_id == nullptr || cookie == 0) {
    return ErrorAnswer(400, "InvalidRDMAToken",
                       "an RC data GET needs x-amz-rdma-session and x-amz-rdma-cookie");
  }
  Status why;
  std::shared_ptr<Session> session = TakeSession(*session_id, &why);
  if (!session) {
    if (why.code() != StatusCode::kNotFound) return ErrorAnswer(503, "SlowDown", why.message());
    // A session we do not know (the gateway restarted): decline, with the data (draft spec).
    plain.headers.emplace_back(std::string(wire::header::kReply), "501");
    return plain;
  }
  if (token->qpn != session->prepared.token.qpn || token->length < plain.stream_length) {
    ReturnSession(session, true);
    return ErrorAnswer(400, "InvalidRDMAToken",
                       "token names another QP than the session's, or a window too small");
  }
  auto job = std::make_shared<Job>();
  job->session = std::move(session);
  job->source = std::move(plain.stream);
  job->length = plain.stream_length;
  job->remote_addr = token->addr;
  job->rkey = token->rkey;
  job->cookie = cookie;
  job->fault = options_.fault;
  plain.stream_length = 0;
  job->plain = std::move(plain);
  return Defer(std::move(job));
}

http::Response RcServer::ServePut(const http::Request& request, uint64_t size,
                                  RdmaPutCommit commit) {
  if (options_.emulate == RdmaEmulation::kHipobjUnsupported) {
    http::Response r = ErrorAnswer(501, "NotImplemented", "hipobj-rc-v2 is not supported");
    r.headers.emplace_back(std::string(wire::header::kProtocolStatus), "unsupported");
    return r;
  }
  const std::string* token_text = request.Find(wire::header::kToken);
  Result<wire::RcToken> token = wire::DecodeRcToken(token_text ? *token_text : "");
  if (!token.ok()) return ErrorAnswer(400, "InvalidRDMAToken", token.status().message());
  if (token->length != size) {
    return ErrorAnswer(400, "InvalidArgument",
                       "x-amz-rdma-size must equal the token's window length");
  }
  const std::string* session_id = request.Find(wire::header::kSession);
  const uint64_t cookie = HexHeader(request, wire::header::kCookie);
  if (session_id == nullptr || cookie == 0) {
    return ErrorAnswer(400, "InvalidArgument",
                       "an RDMA PUT needs x-amz-rdma-session and x-amz-rdma-cookie");
  }
  Status why;
  std::shared_ptr<Session> session = TakeSession(*session_id, &why);
  if (!session) {
    // Unlike a GET, a PUT has no plain answer to fall back on: its body is not here.
    return why.code() == StatusCode::kNotFound
               ? ErrorAnswer(400, "InvalidArgument",
                             "unknown RDMA session (expired or dropped): PREPARE again; nothing "
                             "was stored")
               : ErrorAnswer(503, "SlowDown", why.message());
  }
  if (token->qpn != session->prepared.token.qpn) {
    ReturnSession(session, true);
    return ErrorAnswer(400, "InvalidRDMAToken", "token names another QP than the session's");
  }
  auto job = std::make_shared<Job>();
  job->session = std::move(session);
  job->commit = std::move(commit);
  job->length = size;
  job->remote_addr = token->addr;
  job->rkey = token->rkey;
  job->cookie = cookie;
  job->fault = options_.fault;
  return Defer(std::move(job));
}

http::Response RcServer::Defer(std::shared_ptr<Job> job) {
  http::Response r;
  r.deferred = [this, job = std::move(job)](http::ResponseSink sink) {
    job->sink = std::move(sink);
    {
      MutexLock lock(mutex_);
      jobs_.push_back(job);
    }
    // All: a worker holding a job back (--rdma-fault timeout) also waits on wake_ and would
    // swallow a single notification meant for an idle worker.
    wake_.notify_all();
  };
  return r;
}

void RcServer::RunWorker(size_t index) {
  while (true) {
    std::shared_ptr<Job> job;
    {
      MutexLock lock(mutex_);
      wake_.wait(lock, [this]() REQUIRES(mutex_) { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (job->fault == RdmaFault::kTimeout) {
      // Held back on this worker, never on an io thread; the client gives up first. The two log
      // lines let a test order an HTTP request against the hold (issue 21: nothing else may wait
      // on it).
      REELFS_LOG_INFO(kLog, "session {}: holding the transfer {} ms (--rdma-fault timeout)",
                      job->session->id, options_.fault_delay.count());
      bool stopping = false;
      {
        MutexLock lock(mutex_);
        stopping = wake_.wait_for(lock, options_.fault_delay,
                                  [this]() REQUIRES(mutex_) { return stopping_; });
      }
      if (stopping) {
        // Shutting down: the transfer never starts (nor stores anything), as for a queued job.
        ReturnSession(job->session, true);
        job->sink(ErrorAnswer(503, "SlowDown", "gateway stopping"));
        continue;
      }
      REELFS_LOG_INFO(kLog, "session {}: hold over, transfer starts", job->session->id);
    }
    bool healthy = true;
    http::Response answer;
    if (job->commit) {
      answer = RunPut(*job, index, &healthy);
    } else {
      Result<uint64_t> moved = Transfer(*job, index);
      healthy = moved.ok();
      if (!moved.ok()) {
        REELFS_LOG_WARN(kLog, "session {}: transfer failed: {}", job->session->id,
                        moved.status().ToString());
        answer = ErrorAnswer(500, "RDMATransferFailed", moved.status().message());
      } else if (job->ready) {
        Result<wire::HeaderList> headers = wire::EncodeRcReadyReply(
            {.bytes_transferred = *moved, .cookie = job->cookie, .etag = job->etag});
        answer = headers.ok() ? EmptyAnswer(200, std::move(*headers))
                              : ErrorAnswer(500, "InternalError", headers.status().message());
        answer.headers.emplace_back(std::string(kObjectSizeHeader),
                                    std::to_string(job->object_size));
        answer.log_context =
            fmt::format("op=RdmaReady session={} bytes={}", job->session->id, *moved);
      } else {
        answer = std::move(job->plain);
        answer.headers.emplace_back(std::string(wire::header::kReply),
                                    std::to_string(answer.status));
        answer.headers.emplace_back(std::string(wire::header::kBytesTransferred),
                                    std::to_string(*moved));
        answer.log_context += fmt::format(" rdma_bytes={}", *moved);
      }
    }
    if (!healthy) {
      // Nothing the client still sends may land in the staging slot the next job uses: the QP
      // goes to ERR now (flushing what is outstanding), before the slot is reused.
      job->session->qp->MoveToError().IgnoreError();
    }
    ReturnSession(job->session, healthy);
    job->sink(std::move(answer));
  }
}

http::Response RcServer::RunPut(Job& job, size_t worker, bool* healthy) {
  // An UploadPart's body goes in place when it can (RdmaPutCommit::target), as over HTTP.
  auto tmp = job.commit.target ? job.commit.target(job.length) : store_.fs().CreateTmp("rdma-put");
  if (!tmp.ok()) {
    // The QP is fine; the gateway is not (no inode, no space for the temp file's entry).
    return ErrorAnswer(500, "InternalError", tmp.status().message());
  }
  job.tmp = &*tmp;
  Result<std::string> md5 = TransferIn(job, worker);
  job.tmp = nullptr;
  if (!md5.ok()) {
    const int err = md5.status().detail().sys_errno;
    if (err == ENOSPC || err == EDQUOT) {
      // The temp file is removed by its destructor; the QP did nothing wrong.
      REELFS_LOG_ERROR(kLog, "session {}: disk full: {}", job.session->id, md5.status().ToString());
      return ErrorAnswer(507, "InsufficientStorage",
                         "The gateway's disk is full; the object was not stored.");
    }
    *healthy = false;
    REELFS_LOG_WARN(kLog, "session {}: RDMA READ failed: {}", job.session->id,
                    md5.status().ToString());
    return ErrorAnswer(500, "RDMATransferFailed", md5.status().message());
  }
  // The same store step and answer as an HTTP PUT of these bytes (ETag, errors such as
  // NoSuchUpload when the upload went meanwhile). The temp file goes away unless published.
  http::Response answer = job.commit(*tmp, *md5, job.length);
  if (answer.status != 200) return answer;
  std::string etag;
  for (const auto& [name, value] : answer.headers) {
    if (name == "ETag") etag = value;
  }
  Result<wire::HeaderList> headers = wire::EncodeRcReadyReply(
      {.bytes_transferred = job.length, .cookie = job.cookie, .etag = etag});
  if (!headers.ok()) return ErrorAnswer(500, "InternalError", headers.status().message());
  answer.headers.emplace_back(std::string(wire::header::kReply), "200");
  for (auto& h : *headers) answer.headers.push_back(std::move(h));
  answer.log_context += fmt::format(" session={} rdma_bytes={}{}", job.session->id, job.length,
                                    job.ready ? " via=ready" : "");
  return answer;
}

Result<std::string> RcServer::TransferIn(Job& job, size_t worker) {
  verbs::RcQueuePair& qp = *job.session->qp;
  if (job.fault == RdmaFault::kQpError) REELFS_RETURN_IF_ERROR(qp.MoveToError());
  const verbs::VerbsRegion& staging = *staging_[worker];
  const std::span<std::byte> buffer = staging.host_bytes();
  s3::Digest md5(s3::Digest::Algorithm::kMd5);
  uint64_t done = 0;
  while (done < job.length) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), job.length - done));
    std::span<std::byte> piece = buffer.first(n);
    REELFS_RETURN_IF_ERROR(qp.PostRead({.bytes = piece, .lkey = staging.lkey()},
                                       job.remote_addr + done, job.rkey, /*wr_id=*/3));
    REELFS_ASSIGN_OR_RETURN(ibv_wc wc, qp.WaitCompletion(options_.completion_timeout));
    if (wc.status != IBV_WC_SUCCESS) return verbs::WcToStatus(wc, "RDMA READ");
    const std::string_view bytes(reinterpret_cast<const char*>(piece.data()), n);
    md5.Update(bytes);
    REELFS_RETURN_IF_ERROR(job.tmp->Write(bytes));
    done += n;
  }
  return s3::HexEncode(md5.Finish());
}

Result<uint64_t> RcServer::Transfer(Job& job, size_t worker) {
  verbs::RcQueuePair& qp = *job.session->qp;
  if (job.fault == RdmaFault::kQpError) REELFS_RETURN_IF_ERROR(qp.MoveToError());
  const verbs::VerbsRegion& staging = *staging_[worker];
  const std::span<std::byte> buffer = staging.host_bytes();
  auto wait = [&](const char* what) -> Status {
    REELFS_ASSIGN_OR_RETURN(ibv_wc wc, qp.WaitCompletion(options_.completion_timeout));
    if (wc.status != IBV_WC_SUCCESS) return verbs::WcToStatus(wc, what);
    return Status::Ok();
  };
  uint64_t done = 0;
  while (done < job.length) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), job.length - done));
    std::span<std::byte> piece = buffer.first(n);
    if (job.source) {
      size_t got = 0;
      while (got < n) {
        REELFS_ASSIGN_OR_RETURN(
            size_t r, job.source->Read(
                          std::span<char>(reinterpret_cast<char*>(piece.data()) + got, n - got)));
        if (r == 0) return Status::DataLoss("object ended early");
        got += r;
      }
    } else {
      REELFS_RETURN_IF_ERROR(ReadFully(job.fd.get(), piece, job.file_offset + done));
    }
    REELFS_RETURN_IF_ERROR(qp.PostWrite({.bytes = piece, .lkey = staging.lkey()},
                                        job.remote_addr + done, job.rkey,
                                        /*wr_id=*/1));
    REELFS_RETURN_IF_ERROR(wait("RDMA WRITE"));
    done += n;
  }
  // The last write carries the cookie: RC delivers in order, so its completion at the client
  // means everything before it has landed.
  REELFS_RETURN_IF_ERROR(qp.PostWriteWithImm({.bytes = {}, .lkey = staging.lkey()}, job.remote_addr,
                                             job.rkey, static_cast<uint32_t>(job.cookie),
                                             /*wr_id=*/2));
  REELFS_RETURN_IF_ERROR(wait("RDMA WRITE with immediate"));
  return done;
}

}  // namespace reelfs::gateway

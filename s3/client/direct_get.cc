// The direct receiver (direct_get.h): a queue, receiver threads, keep-alive connections.
#include "s3/client/direct_get.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include "common/cancel.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/scope_exit.h"
#include "common/strings.h"
#include "common/thread_annotations.h"
#include "common/unique_fd.h"
#include "s3/client/endpoint_set.h"
#include "s3/client/object_headers.h"
#include "s3/client/raw_http.h"

namespace reelfs::s3 {
namespace {

// Whether a kept-alive connection can carry a request: nothing to read on it (a close from the
// server reads as end of file, stray bytes as data; either way it is done).
bool StillUsable(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Receives exactly `out.size()` bytes (blocking; the socket's receive timeout bounds each wait).
Status ReceiveAll(int fd, std::span<std::byte> out) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::recv(fd, out.data() + got, out.size() - got, MSG_WAITALL);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return Status::Unavailable("the server closed the connection after " + std::to_string(got) +
                                 " of " + std::to_string(out.size()) + " body bytes");
    } else if (errno != EINTR) {
      return ErrnoToStatus(errno == EAGAIN ? ETIMEDOUT : errno,
                           "receive the body after " + std::to_string(got) + " bytes");
    }
  }
  return Status::Ok();
}

// What a failed attempt says about its endpoint's health (as SocketBodySource judges it): a
// failure to reach it, or its 5xx, counts against it; an answer this receiver does not take says
// nothing.
EndpointSet::Outcome OutcomeOf(const Status& s) {
  if (s.ok()) return EndpointSet::Outcome::kOk;
  if (s.code() == StatusCode::kCancelled) return EndpointSet::Outcome::kCancelled;
  const int http = s.detail().http_status;
  if (http >= 500) return EndpointSet::Outcome::kEndpointFailure;
  if (http > 0 || s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kFailedPrecondition)
    return EndpointSet::Outcome::kOtherError;
  return EndpointSet::Outcome::kEndpointFailure;
}

}  // namespace

struct DirectGet::Impl {
  struct Job {
    GetObjectRequest req;
    Callback<GetObjectResult> done;
  };

  Impl(const TransportOptions& o, uint64_t min, int threads_max, Fallback fb)
      : options(o),
        min_bytes(min),
        max_threads(static_cast<size_t>(std::max(1, threads_max))),
        fallback(std::move(fb)) {
    const size_t endpoints = options.endpoints != nullptr ? options.endpoints->size() : 1;
    idle.resize(endpoints);
  }

  void Submit(const std::shared_ptr<Impl>& self, Job job);
  void Worker();
  void Run(Job job);
  // One exchange on endpoint `index`: the result, or why the request goes to the fallback.
  Result<GetObjectResult> Exchange(size_t index, const Endpoint& ep, const GetObjectRequest& req,
                                   const std::string& what);
  UniqueFd TakeIdle(size_t index);
  void KeepIdle(size_t index, UniqueFd fd);
  void Stop();

  const TransportOptions options;
  const uint64_t min_bytes;
  // Receiver threads at most; also the idle connections kept per endpoint (no more can be in
  // use at once).
  const size_t max_threads;
  const Fallback fallback;
  // Cancelled at Stop: every running exchange's socket is shut down through it.
  const std::shared_ptr<CancellationToken> stop = CancellationToken::Create();

  Mutex mu;
  CondVar wake;
  bool stopping GUARDED_BY(mu) = false;
  std::deque<Job> queue GUARDED_BY(mu);
  std::vector<std::thread> threads GUARDED_BY(mu);
  size_t waiting GUARDED_BY(mu) = 0;                       // threads waiting for a job
  std::vector<std::vector<UniqueFd>> idle GUARDED_BY(mu);  // per endpoint index

  std::atomic<uint64_t> requests{0}, bytes{0}, fallbacks{0}, connects{0};
};

void DirectGet::Impl::Submit(const std::shared_ptr<Impl>& self, Job job) {
  ++requests;
  bool stopped = false;
  {
    MutexLock lock(mu);
    stopped = stopping;
    if (!stopped) {
      // A thread per queued job up to max_threads: a reader's window of parts is received in
      // parallel, not one part after another.
      if (queue.size() + 1 <= waiting || threads.size() >= max_threads) {
        queue.push_back(std::move(job));
        wake.notify_one();
        return;
      }
      try {
        threads.emplace_back([self] { self->Worker(); });
        queue.push_back(std::move(job));  // the new thread waits for `mu` to take it
        return;
      } catch (const std::system_error& e) {
        if (!threads.empty()) {
          queue.push_back(std::move(job));  // a running receiver takes it later
          wake.notify_one();
          return;
        }
        REELFS_LOG_WARN("s3", "direct GET: no receiver thread ({}); using libcurl", e.what());
      }
    }
  }
  if (stopped) return job.done(Status::Cancelled("GetObject " + job.req.key + ": client closed"));
  ++fallbacks;
  fallback(job.req, std::move(job.done));
}

void DirectGet::Impl::Worker() {
  for (;;) {
    Job job;
    {
      MutexLock lock(mu);
      ++waiting;
      wake.wait(lock, [&]() REQUIRES(mu) { return stopping || !queue.empty(); });
      --waiting;
      if (queue.empty()) return;  // stopping, nothing left
      job = std::move(queue.front());
      queue.pop_front();
    }
    Run(std::move(job));
  }
}

void DirectGet::Impl::Run(Job job) {
  const GetObjectRequest& req = job.req;
  const std::string what = "GetObject " + req.bucket + "/" + req.key + " (direct)";
  EndpointSet* set = options.endpoints.get();
  const size_t index = set != nullptr ? set->Acquire() : 0;
  const Endpoint& ep = set != nullptr ? set->endpoint(index) : options.endpoint;
  Result<GetObjectResult> got = Status::Cancelled(what);
  const bool cancelled_before =
      (req.cancel != nullptr && req.cancel->cancelled()) || stop->cancelled();
  if (!cancelled_before) got = Exchange(index, ep, req, what);
  const bool cancelled = (req.cancel != nullptr && req.cancel->cancelled()) || stop->cancelled();
  if (!got.ok() && cancelled) got = Status::Cancelled(what + ": cancelled");
  if (set != nullptr) {
    set->Finish(index, OutcomeOf(got.ok() ? Status::Ok() : got.status()), got.ok() ? got->bytes : 0,
                std::chrono::steady_clock::now());
  }
  if (got.ok()) {
    bytes += got->bytes;
    return job.done(std::move(got));
  }
  if (cancelled) return job.done(std::move(got).status());
  // The first fallback is worth a line (a server this receiver cannot talk to shows here); the
  // rest are expected now and then (a 404, a 503, a connection the server dropped).
  const bool first = fallbacks.fetch_add(1) == 0;
  if (first) {
    REELFS_LOG_INFO("s3", "{}: left to libcurl's path ({})", what, got.status().ToString());
  } else {
    REELFS_LOG_DEBUG("s3", "{}: left to libcurl's path ({})", what, got.status().ToString());
  }
  fallback(req, std::move(job.done));
}

Result<GetObjectResult> DirectGet::Impl::Exchange(size_t index, const Endpoint& ep,
                                                  const GetObjectRequest& req,
                                                  const std::string& what) {
  const std::string wire =
      SignedRangedGet(options, ep, req.bucket, req.key, *req.range, req.if_match);
  // One token for the caller's cancel and the client's stop, so that either shuts the socket
  // down wherever the exchange blocks (connect included).
  const auto token = CancellationToken::Create();
  const uint64_t on_stop = stop->OnCancel([token] { token->Cancel(); });
  const uint64_t on_cancel =
      req.cancel != nullptr ? req.cancel->OnCancel([token] { token->Cancel(); }) : 0;
  ScopeExit unhook([&] {
    stop->RemoveOnCancel(on_stop);
    if (req.cancel != nullptr) req.cancel->RemoveOnCancel(on_cancel);
  });
  SocketCanceller canceller(token);
  UniqueFd fd = TakeIdle(index);
  bool reused = fd.valid();
  ScopeExit forget([&] { canceller.Watch(-1); });  // before `fd` closes: its number may be reused
  Result<std::string> raw = Status::Unavailable("not sent");
  for (;;) {
    if (!fd.valid()) {
      Result<UniqueFd> connected =
          ConnectTcp(ep, options.connect_timeout, options.idle_timeout, canceller);
      if (!connected.ok()) return connected.status().WithContext(what);
      ++connects;
      fd = std::move(connected).value();
    }
    canceller.Watch(fd.get());
    Status sent = SendAll(fd.get(), wire);
    if (sent.ok()) raw = ReadHead(fd.get());
    if (sent.ok() && raw.ok()) break;
    // A kept-alive connection the server closed meanwhile fails here: once more on a new one.
    if (!reused || canceller.cancelled()) {
      return (sent.ok() ? raw.status() : sent).WithContext(what);
    }
    reused = false;
    canceller.Watch(-1);
    fd.Reset();
  }
  Result<ResponseHead> head = ParseResponseHead(*raw);
  if (!head.ok()) return head.status().WithContext(what);
  Result<RangedAnswer> answer = CheckRangedAnswer(*head, *req.range, req.if_match, what);
  if (!answer.ok()) return answer.status();
  if (answer->length > req.buffer.size()) {
    return Status::DataLoss(what + ": a body of " + std::to_string(answer->length) +
                            " bytes for a buffer of " + std::to_string(req.buffer.size()));
  }
  if (Status s = ReceiveAll(fd.get(), req.buffer.first(answer->length)); !s.ok()) {
    return s.WithContext(what);
  }
  const std::string* connection = head->Header("connection");
  if (connection == nullptr || Lower(*connection).find("close") == std::string::npos) {
    canceller.Watch(-1);
    KeepIdle(index, std::move(fd));
  }
  GetObjectResult out;
  out.http_status = head->status;
  out.bytes = answer->length;
  out.object_size = answer->object_size;
  out.info = ObjectInfoFromHeaders(head->headers, req.key);
  out.info.size = out.object_size;
  return out;
}

UniqueFd DirectGet::Impl::TakeIdle(size_t index) {
  MutexLock lock(mu);
  std::vector<UniqueFd>& kept = idle[index];
  while (!kept.empty()) {
    UniqueFd fd = std::move(kept.back());
    kept.pop_back();
    if (StillUsable(fd.get())) return fd;
  }
  return UniqueFd();
}

void DirectGet::Impl::KeepIdle(size_t index, UniqueFd fd) {
  MutexLock lock(mu);
  if (!stopping && idle[index].size() < max_threads) idle[index].push_back(std::move(fd));
}

void DirectGet::Impl::Stop() {
  std::deque<Job> left;
  std::vector<std::thread> joined;
  {
    MutexLock lock(mu);
    stopping = true;
    left.swap(queue);
    joined.swap(threads);
    for (std::vector<UniqueFd>& kept : idle) kept.clear();
  }
  stop->Cancel();  // shuts down every socket a receiver is blocked on
  wake.notify_all();
  for (Job& job : left) {
    job.done(Status::Cancelled("GetObject " + job.req.bucket + "/" + job.req.key +
                               ": the client was closed"));
  }
  for (std::thread& t : joined) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();  // destroyed from one of its own completions: it ends when that returns
    } else {
      t.join();
    }
  }
}

std::unique_ptr<DirectGet> DirectGet::Create(const TransportOptions& options, uint64_t min_bytes,
                                             int max_threads, Fallback fallback) {
  if (min_bytes == 0) return nullptr;
  if (const char* proxy = ConfiguredProxyVariable(); proxy != nullptr) {
    REELFS_LOG_INFO("s3", "{} is set: every GET goes through libcurl (and the proxy)", proxy);
    return nullptr;
  }
  // An attempt's total time limit is libcurl's to enforce; this receiver has only the idle one.
  if (options.total_timeout.count() > 0) return nullptr;
  if (options.endpoints != nullptr) {
    for (size_t i = 0; i < options.endpoints->size(); ++i) {
      if (options.endpoints->endpoint(i).scheme != "http") return nullptr;
    }
  } else if (options.endpoint.scheme != "http") {
    return nullptr;
  }
  return std::unique_ptr<DirectGet>(
      new DirectGet(std::make_shared<Impl>(options, min_bytes, max_threads, std::move(fallback))));
}

DirectGet::DirectGet(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

DirectGet::~DirectGet() { impl_->Stop(); }

bool DirectGet::Takes(const GetObjectRequest& req) const {
  return req.range.has_value() && req.range->length >= impl_->min_bytes &&
         req.buffer.size() >= req.range->length && req.sink == nullptr &&
         req.extra_headers.empty() && req.endpoint.empty();
}

void DirectGet::Submit(const GetObjectRequest& req, Callback<GetObjectResult> done) {
  impl_->Submit(impl_, Impl::Job{req, std::move(done)});
}

DirectGetCounters DirectGet::counters() const {
  return {.requests = impl_->requests.load(),
          .bytes = impl_->bytes.load(),
          .fallbacks = impl_->fallbacks.load(),
          .connects = impl_->connects.load()};
}

}  // namespace reelfs::s3

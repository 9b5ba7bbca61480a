#include "s3/client/transport.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/log.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "common/thread_annotations.h"
#include "s3/client/curl_handles.h"
#include "s3/client/curl_status.h"
#include "s3/client/endpoint_set.h"
#include "s3/client/object_headers.h"
#include "s3/client/operation_internal.h"
#include "s3/client/redact.h"
#include "s3/client/refreshing_credentials.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/range.h"
#include "s3/protocol/time_format.h"

namespace reelfs::s3 {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

constexpr std::string_view kLog = "s3";
constexpr size_t kMaxErrorBody = 64 * 1024;   // error documents are small; don't buffer junk
constexpr long kCurlBufferSize = 256 * 1024;  // fewer, larger write callbacks on fast links
constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
// How long the loop sleeps at most. Cancellation has no wakeup hook, so while any operation
// carries a token the loop looks at the tokens this often (an aborted GET must end promptly).
constexpr int kIdlePollMs = 1000;
constexpr int kCancelPollMs = 50;

bool IsSuccess(int status) { return status >= 200 && status < 300; }

int CurlDebug(CURL* /*handle*/, curl_infotype type, char* data, size_t size,
              void* /*userp*/) noexcept {
  // Headers and curl's own remarks only; bodies would flood the log (and may be secret data).
  const char* dir = nullptr;
  switch (type) {
    case CURLINFO_TEXT:
      dir = "*";
      break;
    case CURLINFO_HEADER_IN:
      dir = "<";
      break;
    case CURLINFO_HEADER_OUT:
      dir = ">";
      break;
    default:
      return 0;
  }
  try {
    std::string text = RedactSecrets(std::string_view(data, size));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    REELFS_LOG_TRACE("curl", "{} {}", dir, text);
  } catch (...) {  // logging must never throw through libcurl
  }
  return 0;
}

// The SigV4 signing key depends only on (secret, date, region, service): derive it once a day
// instead of four HMACs per attempt. Loop thread only.
class SigningKeyCache {
 public:
  const std::string& Get(const Credentials& creds, std::string_view date, std::string_view region,
                         std::string_view service) {
    if (key_.empty() || date != date_ || region != region_ || service != service_ ||
        creds.secret_access_key != secret_) {
      key_ = SigningKey(creds.secret_access_key, date, region, service);
      secret_ = creds.secret_access_key;
      date_ = date;
      region_ = region;
      service_ = service;
    }
    return key_;
  }

 private:
  std::string date_, region_, service_, secret_, key_;
};

// One submitted operation: its request, completion, and the state kept across attempts.
struct Exchange {
  HttpRequest req;
  HttpCallback done;
  std::span<const std::byte> upload;  // req.body or req.owned_body
  std::string payload_hash;
  std::string content_md5;
  int attempt = 0;  // attempts started
  // The endpoint of the current attempt (EndpointSet index), whether it is counted there, the one
  // the previous attempt failed on, and for an active probe the endpoint it is pinned to.
  size_t endpoint = 0;
  bool endpoint_held = false;
  std::optional<size_t> failed_endpoint;
  std::optional<size_t> probe_endpoint;

  // Per attempt (reset by ResetAttempt).
  CurlEasy easy;      // owned while the attempt runs; back to the pool afterwards
  CurlSlist headers;  // must outlive the attempt (libcurl keeps the pointer)
  char error_buffer[CURL_ERROR_SIZE] = {};
  size_t upload_offset = 0;
  int status = 0;
  bool headers_done = false;
  std::vector<std::pair<std::string, std::string>> response_headers;
  std::string body;     // non-streamed or error body
  Status abort_status;  // set by a callback that aborted the transfer
  std::optional<ByteRange> attempt_range;
  uint64_t skip = 0;          // body bytes of this attempt to drop (a 200 answer to a range)
  uint64_t keep = kUnknown;   // body bytes of this attempt to keep
  uint64_t body_seen = 0;     // body bytes of this attempt's 2xx response, kept or not
  bool whole_object = false;  // this attempt's 2xx body is the whole object (a 200)
  bool length_known = true;   // this attempt's body length came in a header

  // Across attempts (streamed bodies).
  uint64_t delivered = 0;    // bytes handed to buffer/sink
  bool shape_known = false;  // op_offset/expected/object_size set from a first 2xx response
  uint64_t op_offset = 0;    // object offset of the first byte delivered
  uint64_t expected = 0;     // body bytes the whole operation delivers (kUnknown: until the end)
  uint64_t object_size = 0;  // 0: unknown
  std::string first_etag;    // stripped; empty when the first response had no strong ETag

  bool Cancelled() const { return req.cancel && req.cancel->cancelled(); }
  bool Streaming() const { return req.stream_body; }
  const std::string* Header(std::string_view name) const {
    for (const auto& [k, v] : response_headers) {
      if (k == name) return &v;
    }
    return nullptr;
  }

  void ResetAttempt() {
    upload_offset = 0;
    status = 0;
    headers_done = false;
    response_headers.clear();
    body.clear();
    abort_status = Status::Ok();
    skip = 0;
    keep = kUnknown;
    body_seen = 0;
    whole_object = false;
    length_known = true;
    error_buffer[0] = '\0';
  }

  // Forgets what earlier attempts delivered, so the next one starts at the first byte again.
  void RestartFromScratch() {
    delivered = 0;
    shape_known = false;
    op_offset = 0;
    expected = 0;
    object_size = 0;
    first_etag.clear();
  }

  // Called once the final response's headers are in: decides which body bytes are kept.
  Status OnHeadersComplete() {
    if (!Streaming() || !IsSuccess(status)) return Status::Ok();
    const std::string* etag = Header("etag");
    // A weak ETag cannot back If-Match (strong comparison): treat it as none.
    const std::string this_etag =
        etag != nullptr && !IsWeakEtag(*etag) ? StripEtag(*etag) : std::string();
    // Every answer of a pinned GET, the first one included: the server may ignore If-Match
    // (docs/semantics.md "Reads"). An ETag-less answer cannot show it is the pinned version.
    if (!req.pinned_etag.empty() && (etag == nullptr || StripEtag(*etag) != req.pinned_etag)) {
      return internal::PinnedEtagMismatch(req.what, req.pinned_etag,
                                          etag ? StripEtag(*etag) : std::string(), status);
    }
    if (shape_known && !first_etag.empty() && !this_etag.empty() && this_etag != first_etag) {
      // The version changed between two attempts: the reader's view is gone, as with a 412.
      return Status(
          StatusCode::kFailedPrecondition, StatusReason::kObjectChanged,
          req.what + ": object changed while resuming an interrupted transfer",
          StatusDetail{.http_status = status, .s3_code = std::string(kS3PreconditionFailed)});
    }
    const std::string* cl = Header("content-length");
    uint64_t content_length = 0;
    if (cl != nullptr) {
      const auto [end, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), content_length);
      if (ec != std::errc() || end != cl->data() + cl->size() || cl->empty()) {
        return internal::ProtocolViolation(req.what, "malformed Content-Length '" + *cl + "'",
                                           status);
      }
    }
    uint64_t first = 0, length = 0, total = 0;
    if (status == 206) {
      const std::string* cr = Header("content-range");
      if (cr == nullptr) {
        return internal::ProtocolViolation(req.what, "206 without Content-Range", status);
      }
      auto parsed = ParseContentRange(*cr);
      if (!parsed.ok()) {
        return internal::ProtocolViolation(req.what, "unparsable Content-Range", status,
                                           parsed.status());
      }
      // The range must be the one asked for: the same first byte, no more bytes than asked, inside
      // the object, and as long as the body (a shifted or over-long range would put other bytes
      // at the reader's offset).
      const uint64_t want = attempt_range ? attempt_range->offset : 0;
      const bool total_known = parsed->total_known;
      std::string problem;
      if (parsed->first != want) {
        problem = "Content-Range '" + *cr + "' starts at " + std::to_string(parsed->first) +
                  ", the request asked for " + std::to_string(want);
      } else if (parsed->last < parsed->first || (total_known && parsed->last >= parsed->total)) {
        problem = "Content-Range '" + *cr + "' is not a range of the object";
      } else if (attempt_range && parsed->last - parsed->first + 1 > attempt_range->length) {
        problem = "Content-Range '" + *cr + "' is longer than the " +
                  std::to_string(attempt_range->length) + " bytes asked for";
      } else if (cl != nullptr && content_length != parsed->last - parsed->first + 1) {
        problem = "Content-Length " + *cl + " does not match Content-Range '" + *cr + "'";
      }
      if (!problem.empty()) return internal::ProtocolViolation(req.what, problem, status);
      first = parsed->first;
      length = parsed->last - parsed->first + 1;
      total = total_known ? parsed->total : 0;
      skip = 0;
      keep = length;
    } else {
      // A 200: the whole object, whatever was asked for.
      whole_object = true;
      length_known = cl != nullptr;
      total = content_length;
      if (attempt_range) {
        // A server that ignores Range sends the whole object: take the requested slice. Without
        // a Content-Length (chunked) the object's size shows only at the end of the body: keep
        // up to the requested length and clamp `expected` then (FinishBody).
        first = attempt_range->offset;
        skip = first;
        length = !length_known   ? attempt_range->length
                 : first < total ? std::min(attempt_range->length, total - first)
                                 : 0;
      } else {
        first = 0;
        skip = 0;
        length = length_known ? content_length : kUnknown;
      }
      keep = length;
    }
    // A buffer too small for what the headers announce fails now, before any byte is copied.
    if (!req.sink && length_known && keep != kUnknown &&
        (keep > req.buffer.size() || delivered > req.buffer.size() - keep)) {
      return Status::OutOfRange(req.what + ": body (" + std::to_string(delivered + keep) +
                                " bytes) is larger than the buffer (" +
                                std::to_string(req.buffer.size()) + " bytes)");
    }
    if (!shape_known) {
      shape_known = true;
      op_offset = first;
      expected = length;
      object_size = total;
      first_etag = this_etag;
    }
    return Status::Ok();
  }

  // After a clean end of a 2xx streamed body: what the body turned out to contain. Non-OK when
  // fewer bytes arrived than the operation expects (a retryable, resumable break).
  Status FinishBody() {
    if (whole_object && !length_known) {
      // A 200 without Content-Length that ended cleanly (chunked terminator or close) carried
      // the whole object: now its size is known, and a range past the end is cut to it.
      object_size = body_seen;
      const uint64_t available = object_size > op_offset ? object_size - op_offset : 0;
      expected = std::min(expected, available);
    }
    if (shape_known && expected != kUnknown && delivered < expected) {
      return Status::Unavailable(req.what + ": body ended early (" + std::to_string(delivered) +
                                 " of " + std::to_string(expected) + " bytes)");
    }
    return Status::Ok();
  }

  Status Deliver(std::span<const std::byte> chunk) {
    if (req.sink) {
      try {
        return req.sink(chunk);
      } catch (...) {
        return Status::Internal(req.what + ": sink threw an exception");
      }
    }
    if (chunk.size() > req.buffer.size() - delivered) {
      return Status::OutOfRange(req.what + ": body is larger than the buffer (" +
                                std::to_string(req.buffer.size()) + " bytes)");
    }
    std::memcpy(req.buffer.data() + delivered, chunk.data(), chunk.size());
    return Status::Ok();
  }

  size_t OnBody(const char* data, size_t n) {
    if (Cancelled()) {
      abort_status = Status::Cancelled(req.what + ": cancelled");
      return 0;
    }
    if (!headers_done) {  // libcurl delivers headers first; be defensive anyway
      headers_done = true;
      abort_status = OnHeadersComplete();
      if (!abort_status.ok()) return 0;
    }
    if (!Streaming() || !IsSuccess(status)) {
      if (status >= 300 && body.size() + n > kMaxErrorBody) return n;  // keep the head only
      body.append(data, n);
      return n;
    }
    body_seen += n;
    size_t consumed = 0;
    if (skip > 0) {
      const size_t drop = static_cast<size_t>(std::min<uint64_t>(skip, n));
      skip -= drop;
      consumed = drop;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(keep, n - consumed));
    if (take > 0) {
      keep -= take;
      abort_status =
          Deliver({reinterpret_cast<const std::byte*>(data) + consumed, static_cast<size_t>(take)});
      if (!abort_status.ok()) return 0;
      delivered += take;
    }
    return n;  // bytes past `keep` (a 200 answer to a range) are read and dropped
  }

  size_t OnHeader(const char* data, size_t n) {
    std::string_view line(data, n);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100-continue or a redirect)
      response_headers.clear();
      headers_done = false;
      const auto sp = line.find(' ');
      status =
          sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
      return n;
    }
    std::string_view trimmed = Trim(line, kWhitespace);
    if (trimmed.empty()) {
      if (status >= 200 && !headers_done) {
        headers_done = true;
        abort_status = OnHeadersComplete();
        if (!abort_status.ok()) return 0;
      }
      return n;
    }
    const auto colon = trimmed.find(':');
    if (colon != std::string_view::npos) {
      response_headers.emplace_back(Lower(Trim(trimmed.substr(0, colon))),
                                    std::string(Trim(trimmed.substr(colon + 1))));
    }
    return n;
  }

  size_t OnRead(char* out, size_t n) {
    if (Cancelled()) {
      abort_status = Status::Cancelled(req.what + ": cancelled");
      return CURL_READFUNC_ABORT;
    }
    const size_t left = upload.size() - upload_offset;
    const size_t take = std::min(left, n);
    std::memcpy(out, upload.data() + upload_offset, take);
    upload_offset += take;
    return take;
  }
};

// libcurl callbacks: C entry points, so nothing may throw through them (a Status message
// allocation can); a throw aborts the transfer instead.
size_t WriteCallback(char* data, size_t size, size_t nmemb, void* userdata) noexcept {
  try {
    return static_cast<Exchange*>(userdata)->OnBody(data, size * nmemb);
  } catch (...) {
    return 0;
  }
}

size_t HeaderCallback(char* data, size_t size, size_t nmemb, void* userdata) noexcept {
  try {
    return static_cast<Exchange*>(userdata)->OnHeader(data, size * nmemb);
  } catch (...) {
    return 0;
  }
}

size_t ReadCallback(char* out, size_t size, size_t nmemb, void* userdata) noexcept {
  try {
    return static_cast<Exchange*>(userdata)->OnRead(out, size * nmemb);
  } catch (...) {
    return CURL_READFUNC_ABORT;
  }
}

int SeekCallback(void* userdata, curl_off_t offset, int origin) noexcept {
  auto* ex = static_cast<Exchange*>(userdata);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > ex->upload.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  ex->upload_offset = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

int ProgressCallback(void* userdata, curl_off_t, curl_off_t, curl_off_t, curl_off_t) noexcept {
  auto* ex = static_cast<Exchange*>(userdata);
  if (!ex->Cancelled()) return 0;
  try {
    if (ex->abort_status.ok()) ex->abort_status = Status::Cancelled(ex->req.what + ": cancelled");
  } catch (...) {  // the transfer is aborted anyway; the loop reports the cancellation
  }
  return 1;
}

}  // namespace

const std::string* HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

// The loop's state. Shared between the Transport and the loop thread: when a completion destroys
// the Transport on the loop thread, the thread detaches and keeps this alive until it is done.
struct Transport::Impl {
  explicit Impl(TransportOptions o)
      : options(std::move(o)), policy(options.retry, options.jitter) {}

  TransportOptions options;
  RetryPolicy policy;
  bool trace_curl = false;  // decided once at Create: the check is not free per attempt
  CurlGlobal curl_global;   // keeps libcurl initialized for as long as any handle exists
  CurlMulti multi;
  std::vector<CurlEasy> idle_easies;  // loop thread only; reset (no dangling pointers)
  // Exchanges in flight (in curl) or waiting for a retry; owned here, loop thread only.
  std::unordered_map<Exchange*, std::unique_ptr<Exchange>> live;
  size_t live_with_token = 0;                         // loop thread only
  std::multimap<SteadyTime, Exchange*> retry_timers;  // loop thread only
  std::deque<std::unique_ptr<Exchange>> fresh;        // loop thread only; reused each turn
  SigningKeyCache signing_keys;                       // loop thread only
  std::optional<SteadyTime> next_probe;               // loop thread only

  // Lock order: `mu` is a leaf; never held while calling libcurl or a completion.
  Mutex mu;
  std::deque<std::unique_ptr<Exchange>> submitted GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;

  std::atomic<uint64_t> requests{0}, attempts{0}, retries{0}, failures{0}, bytes_sent{0},
      bytes_received{0};
  std::thread loop;  // joined by ~Transport, or detached when that runs on this very thread

  void Run();
  // Steps of one loop turn.
  bool TakeSubmitted();  // false: stopping (what was taken is completed)
  void FireRetryTimers();
  void AbortCancelled();
  void ReapFinished();
  int PollTimeoutMs() const;
  void Shutdown();

  void StartDueProbes();
  void FinishEndpoint(Exchange& ex, EndpointSet::Outcome outcome, uint64_t bytes);
  void StartAttempt(std::unique_ptr<Exchange> owned_or_null, Exchange* ex);
  Status ConfigureEasy(Exchange& ex);
  Status BuildHeaders(Exchange& ex, const RequestTarget& target);
  void SetTransferOptions(Exchange& ex, const RequestTarget& target);
  void SetMethodOptions(Exchange& ex);
  void ReleaseEasy(Exchange& ex);
  void OnAttemptDone(Exchange* ex, CURLcode code);
  void Complete(Exchange* ex, Result<HttpResponse> result);
  Status HttpError(const Exchange& ex) const;
};

Result<std::unique_ptr<Transport>> Transport::Create(TransportOptions options) {
  if (!options.endpoints) {
    if (options.endpoint.host.empty()) return Status::InvalidArgument("S3 endpoint has no host");
    options.endpoints = EndpointSet::Single(options.endpoint);
  }
  auto impl = std::make_shared<Impl>(std::move(options));
  REELFS_RETURN_IF_ERROR(impl->curl_global.status());
  impl->multi.reset(curl_multi_init());
  if (!impl->multi) return Status::Internal("curl_multi_init failed");
  const long conns = std::max(1, impl->options.max_connections);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAX_HOST_CONNECTIONS, conns);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAX_TOTAL_CONNECTIONS, conns);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAXCONNECTS, conns);
  impl->trace_curl = LogEnabled(LogLevel::kTrace, "curl");
  // The thread holds its own reference: it may outlive the Transport (see ~Transport).
  impl->loop = std::thread([self = impl] { self->Run(); });
  return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

Credentials CurrentCredentials(const TransportOptions& options) {
  return options.credential_source ? options.credential_source->Current() : options.credentials;
}

Transport::Transport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Transport::~Transport() {
  {
    MutexLock lock(impl_->mu);
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi.get());
  if (impl_->loop.get_id() == std::this_thread::get_id()) {
    // Called from a completion: joining would wait for ourselves. The loop notices `stopping`
    // when the completion returns, finishes the shutdown and drops the last reference to Impl.
    impl_->loop.detach();
  } else {
    impl_->loop.join();
  }
}

const TransportOptions& Transport::options() const { return impl_->options; }

TransportCounters Transport::counters() const {
  TransportCounters c;
  c.requests = impl_->requests.load(std::memory_order_relaxed);
  c.attempts = impl_->attempts.load(std::memory_order_relaxed);
  c.retries = impl_->retries.load(std::memory_order_relaxed);
  c.failures = impl_->failures.load(std::memory_order_relaxed);
  c.bytes_sent = impl_->bytes_sent.load(std::memory_order_relaxed);
  c.bytes_received = impl_->bytes_received.load(std::memory_order_relaxed);
  return c;
}

namespace {

std::unique_ptr<Exchange> PrepareExchange(HttpRequest request, HttpCallback done,
                                          uint64_t unsigned_payload_min_bytes) {
  auto ex = std::make_unique<Exchange>();
  ex->req = std::move(request);
  ex->done = std::move(done);
  if (ex->req.what.empty())
    ex->req.what = ex->req.method + " " + ex->req.bucket + "/" + ex->req.key;
  ex->upload = ex->req.owned_body.empty()
                   ? ex->req.body
                   : std::as_bytes(std::span<const char>(ex->req.owned_body));
  // Hashing runs here, on the caller's thread, so a large body never stalls the event loop.
  const std::string_view body_text(reinterpret_cast<const char*>(ex->upload.data()),
                                   ex->upload.size());
  const uint64_t threshold = unsigned_payload_min_bytes;
  if (ex->upload.empty()) {
    ex->payload_hash = std::string(kEmptyPayloadSha256);
  } else if (threshold > 0 && ex->upload.size() >= threshold) {
    ex->payload_hash = std::string(kUnsignedPayload);
  } else {
    ex->payload_hash = Sha256Hex(body_text);
  }
  // A caller's own claim (UNSIGNED-PAYLOAD on an RDMA data request) wins and is sent once:
  // signing sets the header from payload_hash, so it must not stay in the list as well.
  for (auto it = ex->req.headers.begin(); it != ex->req.headers.end(); ++it) {
    if (it->first == "x-amz-content-sha256") {
      ex->payload_hash = it->second;
      ex->req.headers.erase(it);
      break;
    }
  }
  if (ex->req.content_md5) ex->content_md5 = Base64Encode(Md5(body_text));
  return ex;
}

}  // namespace

void Transport::Submit(HttpRequest request, HttpCallback done) {
  std::unique_ptr<Exchange> ex = PrepareExchange(std::move(request), std::move(done),
                                                 impl_->options.unsigned_payload_min_bytes);
  impl_->requests.fetch_add(1, std::memory_order_relaxed);
  {
    MutexLock lock(impl_->mu);
    if (!impl_->stopping) {
      impl_->submitted.push_back(std::move(ex));
      // Under the lock: once it is released the loop may complete the exchange, and a completion
      // may destroy this Transport, so nothing after the lock may read impl_.
      curl_multi_wakeup(impl_->multi.get());
    }
  }
  if (ex) {  // not queued: the transport is shutting down
    impl_->failures.fetch_add(1, std::memory_order_relaxed);
    ex->done(Status::Cancelled("S3 client is shutting down"));
  }
}

void Transport::Impl::Run() {
  while (TakeSubmitted()) {
    FireRetryTimers();
    if (options.endpoints->size() > 1) StartDueProbes();
    if (live_with_token > 0) AbortCancelled();
    int running = 0;
    curl_multi_perform(multi.get(), &running);
    ReapFinished();
    const int timeout_ms = PollTimeoutMs();
    if (timeout_ms > 0) curl_multi_poll(multi.get(), nullptr, 0, timeout_ms, nullptr);
  }
  Shutdown();
}

bool Transport::Impl::TakeSubmitted() {
  fresh.clear();
  bool stop = false;
  {
    MutexLock lock(mu);
    fresh.swap(submitted);
    stop = stopping;
  }
  for (auto& owned : fresh) {
    Exchange* raw = owned.get();
    if (stop) {
      live.emplace(raw, std::move(owned));
      if (raw->req.cancel) ++live_with_token;
      Complete(raw, Status::Cancelled(raw->req.what + ": S3 client is shutting down"));
    } else {
      StartAttempt(std::move(owned), raw);
    }
  }
  fresh.clear();
  return !stop;
}

// Retries whose delay is over, and waiting retries that were cancelled meanwhile.
void Transport::Impl::FireRetryTimers() {
  const SteadyTime now = std::chrono::steady_clock::now();
  for (auto it = retry_timers.begin(); it != retry_timers.end();) {
    Exchange* ex = it->second;
    if (it->first <= now || ex->Cancelled()) {
      it = retry_timers.erase(it);
      if (ex->Cancelled()) {
        Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
      } else {
        StartAttempt(nullptr, ex);
      }
    } else {
      ++it;
    }
  }
}

// Active probes of endpoints that were marked down and whose backoff has ended: HEAD / on that
// endpoint alone, one attempt. Any HTTP answer (even 403 or 405) means the server is back.
void Transport::Impl::StartDueProbes() {
  const SteadyTime now = std::chrono::steady_clock::now();
  next_probe.reset();
  for (size_t i : options.endpoints->TakeDueProbes(now, &next_probe)) {
    HttpRequest probe;
    probe.method = "HEAD";
    probe.single_attempt = true;
    probe.what = "probe of " + options.endpoints->Stats()[i].url;
    std::shared_ptr<EndpointSet> set = options.endpoints;
    auto ex = PrepareExchange(
        std::move(probe),
        [set, i](Result<HttpResponse> r) {
          const bool alive = r.ok() || r.status().detail().http_status > 0;
          set->ProbeResult(i, alive, std::chrono::steady_clock::now());
        },
        0);
    ex->probe_endpoint = i;
    Exchange* raw = ex.get();
    StartAttempt(std::move(ex), raw);
  }
}

void Transport::Impl::FinishEndpoint(Exchange& ex, EndpointSet::Outcome outcome, uint64_t bytes) {
  if (!ex.endpoint_held) return;
  ex.endpoint_held = false;
  options.endpoints->Finish(ex.endpoint, outcome, bytes, std::chrono::steady_clock::now());
}

// Transfers whose token was raised: libcurl calls the progress callback only about once a second
// on a stalled transfer, so they are taken out of the multi here instead.
void Transport::Impl::AbortCancelled() {
  std::vector<Exchange*> cancelled;
  for (const auto& [raw, ex] : live) {
    if (ex->easy && ex->Cancelled()) cancelled.push_back(raw);
  }
  for (Exchange* ex : cancelled) {
    curl_multi_remove_handle(multi.get(), ex->easy.get());
    FinishEndpoint(*ex, EndpointSet::Outcome::kCancelled, 0);
    ReleaseEasy(*ex);
    Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
  }
}

void Transport::Impl::ReapFinished() {
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    const CURLcode code = msg->data.result;
    char* priv = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    curl_multi_remove_handle(multi.get(), easy);
    OnAttemptDone(reinterpret_cast<Exchange*>(priv), code);
  }
}

// Sleep until there is socket activity, a wakeup, the next retry, or the poll interval (waiting
// retries and tokens are looked at at least that often).
int Transport::Impl::PollTimeoutMs() const {
  int timeout_ms = live_with_token > 0 ? kCancelPollMs : kIdlePollMs;
  const auto wake_by = [&](SteadyTime at) {
    const auto until = at - std::chrono::steady_clock::now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until).count();
    timeout_ms = static_cast<int>(std::clamp<int64_t>(ms + 1, 0, timeout_ms));
  };
  if (!retry_timers.empty()) wake_by(retry_timers.begin()->first);
  if (next_probe) wake_by(*next_probe);  // an endpoint's probe is due then
  return timeout_ms;
}

// Every operation still known gets its one completion.
void Transport::Impl::Shutdown() {
  for (auto& [raw, ex] : live) {
    if (ex->easy) {
      curl_multi_remove_handle(multi.get(), ex->easy.get());
      FinishEndpoint(*ex, EndpointSet::Outcome::kCancelled, 0);
      ReleaseEasy(*ex);
    }
  }
  retry_timers.clear();
  std::vector<Exchange*> pending;
  for (auto& [raw, ex] : live) pending.push_back(raw);
  for (Exchange* ex : pending) {
    Complete(ex, Status::Cancelled(ex->req.what + ": S3 client is shutting down"));
  }
}

Status Transport::Impl::BuildHeaders(Exchange& ex, const RequestTarget& target) {
  SignableRequest signable;
  signable.method = ex.req.method;
  signable.encoded_path = target.encoded_path;
  signable.raw_query = target.raw_query;
  signable.headers.emplace_back("host", target.host_header);
  for (const auto& h : ex.req.headers) signable.headers.push_back(h);
  if (!ex.content_md5.empty()) signable.headers.emplace_back("content-md5", ex.content_md5);
  ex.attempt_range.reset();
  if (ex.req.stream_body && ex.shape_known && ex.delivered > 0) {
    // Resume after the bytes already delivered, and only from the same object version
    // (OnAttemptDone restarts from scratch instead when there is no ETag to pin it).
    ex.attempt_range = ByteRange{ex.op_offset + ex.delivered, ex.expected - ex.delivered};
    if (!ex.first_etag.empty()) {
      const bool has_if_match = std::any_of(ex.req.headers.begin(), ex.req.headers.end(),
                                            [](const auto& h) { return h.first == "if-match"; });
      if (!has_if_match) signable.headers.emplace_back("if-match", "\"" + ex.first_etag + "\"");
    }
  } else if (ex.req.range) {
    ex.attempt_range = ex.req.range;
  }
  if (ex.attempt_range) {
    signable.headers.emplace_back("range", FormatRangeHeader(*ex.attempt_range));
  }
  signable.payload_hash = ex.payload_hash;
  const Credentials creds = CurrentCredentials(options);
  if (!creds.empty()) {
    // Sign this attempt (fresh x-amz-date, and the credentials of the moment).
    SigV4Params params;
    params.region = options.region;
    params.time = std::chrono::system_clock::now();
    const std::string date = FormatAmzDate(params.time).substr(0, 8);
    SignRequest(signable, creds, params,
                signing_keys.Get(creds, date, params.region, params.service));
  } else {
    signable.headers.emplace_back("x-amz-content-sha256", ex.payload_hash);
  }

  ex.headers.reset();
  for (const auto& [name, value] : signable.headers) {
    if (!AppendHeader(ex.headers, name + ": " + value)) return Status::ResourceExhausted("slist");
  }
  // No "Expect: 100-continue" round trip; no curl-invented Content-Type on POST.
  if (!AppendHeader(ex.headers, "Expect:")) return Status::ResourceExhausted("slist");
  const bool has_content_type =
      std::any_of(signable.headers.begin(), signable.headers.end(),
                  [](const auto& h) { return h.first == "content-type"; });
  if (!has_content_type && !AppendHeader(ex.headers, "Content-Type:")) {
    return Status::ResourceExhausted("slist");
  }
  return Status::Ok();
}

void Transport::Impl::SetTransferOptions(Exchange& ex, const RequestTarget& target) {
  CURL* e = ex.easy.get();
  curl_easy_setopt(e, CURLOPT_URL, target.url.c_str());
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);  // keys may contain "./" and "../": send as is
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, ex.headers.get());
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, reinterpret_cast<char*>(&ex));
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ex.error_buffer);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &WriteCallback);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &HeaderCallback);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &ProgressCallback);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &ex);
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, kCurlBufferSize);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  if (options.idle_timeout.count() > 0) {
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(options.idle_timeout.count() / 1000)));
  }
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(options.total_timeout.count()));
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options.ca_bundle.c_str());
  if (!options.user_agent.empty()) {
    curl_easy_setopt(e, CURLOPT_USERAGENT, options.user_agent.c_str());
  }
  if (trace_curl) {
    curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, &CurlDebug);
    curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  }
}

void Transport::Impl::SetMethodOptions(Exchange& ex) {
  CURL* e = ex.easy.get();
  const auto size = static_cast<curl_off_t>(ex.upload.size());
  if (ex.req.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (ex.req.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (ex.req.method == "PUT") {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, size);
  } else if (ex.req.method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, size);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, ex.req.method.c_str());
  }
  if (ex.req.method == "PUT" || ex.req.method == "POST") {
    curl_easy_setopt(e, CURLOPT_READFUNCTION, &ReadCallback);
    curl_easy_setopt(e, CURLOPT_READDATA, &ex);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &SeekCallback);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, &ex);
  }
}

Status Transport::Impl::ConfigureEasy(Exchange& ex) {
  if (ex.probe_endpoint) {
    ex.endpoint = *ex.probe_endpoint;  // not counted: a probe is not a request
  } else if (ex.req.endpoint && *ex.req.endpoint < options.endpoints->size()) {
    ex.endpoint = options.endpoints->AcquireAt(*ex.req.endpoint);
    ex.endpoint_held = true;
  } else {
    ex.endpoint = options.endpoints->Acquire(ex.failed_endpoint);
    ex.endpoint_held = true;
  }
  const RequestTarget target =
      BuildRequestTarget(options.endpoints->endpoint(ex.endpoint), options.addressing,
                         ex.req.bucket, ex.req.key, ex.req.query);
  REELFS_RETURN_IF_ERROR(BuildHeaders(ex, target));
  SetTransferOptions(ex, target);
  SetMethodOptions(ex);
  return Status::Ok();
}

// Back to the pool, reset: a pooled handle must not keep pointers into a freed Exchange
// (PRIVATE, WRITEDATA, ERRORBUFFER, HTTPHEADER). Its connection stays in the multi's cache.
void Transport::Impl::ReleaseEasy(Exchange& ex) {
  if (!ex.easy) return;
  curl_easy_reset(ex.easy.get());
  ex.headers.reset();
  idle_easies.push_back(std::move(ex.easy));
}

void Transport::Impl::StartAttempt(std::unique_ptr<Exchange> owned, Exchange* ex) {
  if (owned) {
    live.emplace(ex, std::move(owned));
    if (ex->req.cancel) ++live_with_token;
  }
  if (ex->Cancelled()) {
    Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
    return;
  }
  ++ex->attempt;
  attempts.fetch_add(1, std::memory_order_relaxed);
  if (ex->attempt > 1) retries.fetch_add(1, std::memory_order_relaxed);
  ex->ResetAttempt();

  if (!idle_easies.empty()) {
    ex->easy = std::move(idle_easies.back());
    idle_easies.pop_back();
  } else {
    ex->easy.reset(curl_easy_init());
    if (!ex->easy) {
      Complete(ex, Status::ResourceExhausted("curl_easy_init failed"));
      return;
    }
  }
  Status st = ConfigureEasy(*ex);
  if (st.ok()) {
    const CURLMcode mc = curl_multi_add_handle(multi.get(), ex->easy.get());
    if (mc != CURLM_OK) st = Status::Internal(curl_multi_strerror(mc));
  }
  if (!st.ok()) {
    FinishEndpoint(*ex, EndpointSet::Outcome::kCancelled, 0);
    ReleaseEasy(*ex);
    Complete(ex, std::move(st));
  }
}

Status Transport::Impl::HttpError(const Exchange& ex) const {
  S3Error error;
  if (!ex.body.empty()) {
    auto parsed = ParseErrorXml(ex.body);
    if (parsed.ok()) error = std::move(parsed).value();
  }
  error.http_status = ex.status;
  if (error.request_id.empty()) {
    if (const std::string* id = ex.Header("x-amz-request-id")) error.request_id = *id;
  }
  return S3ErrorToStatus(error).WithContext(ex.req.what);
}

void Transport::Impl::OnAttemptDone(Exchange* ex, CURLcode code) {
  curl_off_t up = 0, down = 0;
  curl_easy_getinfo(ex->easy.get(), CURLINFO_SIZE_UPLOAD_T, &up);
  curl_easy_getinfo(ex->easy.get(), CURLINFO_SIZE_DOWNLOAD_T, &down);
  bytes_sent.fetch_add(static_cast<uint64_t>(up), std::memory_order_relaxed);
  bytes_received.fetch_add(static_cast<uint64_t>(down), std::memory_order_relaxed);
  const uint64_t moved = static_cast<uint64_t>(up) + static_cast<uint64_t>(down);
  ReleaseEasy(*ex);

  Status failure;
  AttemptOutcome outcome;
  if (code != CURLE_OK) {
    if (!ex->abort_status.ok()) {
      failure = std::move(ex->abort_status);
      outcome.kind = AttemptOutcome::Kind::kLocalError;
    } else {
      failure = CurlToStatus(code, ex->error_buffer).WithContext(ex->req.what);
      outcome.kind = CurlOutcomeKind(code);
    }
  } else if (!IsSuccess(ex->status)) {
    failure = HttpError(*ex);
    outcome.kind = AttemptOutcome::Kind::kHttpResponse;
    outcome.http_status = ex->status;
    outcome.s3_code = failure.detail().s3_code;
  } else if (ex->req.stream_body) {
    // The connection may close early but cleanly (no Content-Length check by curl on a chunked
    // or close-delimited body, or on a 200 sliced to a range).
    failure = ex->FinishBody();
    if (!failure.ok()) outcome.kind = AttemptOutcome::Kind::kConnectionError;
  }

  // The endpoint's health: it failed if it could not be reached or answered 5xx (503 SlowDown is
  // throttling, not a dead server); any other answer says it is alive.
  const bool endpoint_failed =
      !failure.ok() && (outcome.kind == AttemptOutcome::Kind::kConnectionError ||
                        outcome.kind == AttemptOutcome::Kind::kTimeout ||
                        (outcome.kind == AttemptOutcome::Kind::kHttpResponse &&
                         outcome.http_status >= 500 && outcome.s3_code != "SlowDown"));
  FinishEndpoint(*ex,
                 failure.ok()      ? EndpointSet::Outcome::kOk
                 : endpoint_failed ? EndpointSet::Outcome::kEndpointFailure
                 : outcome.kind == AttemptOutcome::Kind::kLocalError
                     ? EndpointSet::Outcome::kCancelled
                     : EndpointSet::Outcome::kOtherError,
                 moved);

  if (failure.ok()) {
    HttpResponse resp;
    resp.status = ex->status;
    resp.headers = std::move(ex->response_headers);
    resp.body = std::move(ex->body);
    resp.streamed_bytes = ex->delivered;
    resp.object_size = ex->object_size;
    Status valid;
    if (ex->req.validate) {
      try {
        valid = ex->req.validate(resp);
      } catch (...) {
        valid = Status::Internal("response validator threw an exception");
      }
    }
    if (valid.ok()) {
      Complete(ex, std::move(resp));
      return;
    }
    failure = std::move(valid).WithContext(ex->req.what);
    outcome.kind = AttemptOutcome::Kind::kHttpResponse;
    outcome.http_status = failure.detail().http_status;
    outcome.s3_code = failure.detail().s3_code;
  }
  if (ex->Cancelled()) {
    Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
    return;
  }
  // A streamed body that broke part way resumes only when its shape is known, and only pinned to
  // its ETag: without one, a buffer is filled again from the first byte (a sink cannot take back
  // what it was given, so that transfer fails).
  bool resumable = true;
  bool restart = false;
  if (ex->req.stream_body && ex->delivered > 0) {
    if (!ex->shape_known || ex->expected == kUnknown) {
      resumable = false;
    } else if (ex->first_etag.empty()) {
      resumable = !ex->req.sink;
      restart = resumable;
    }
  }
  if (resumable && !ex->req.single_attempt && policy.ShouldRetry(outcome, ex->attempt)) {
    if (restart) {
      REELFS_LOG_DEBUG(kLog, "{}: no ETag to resume against; restarting from the first byte",
                       ex->req.what);
      ex->RestartFromScratch();
    }
    ex->failed_endpoint = ex->endpoint;
    // Another endpoint is up: fail over at once instead of backing off on this one.
    const auto delay = endpoint_failed && options.endpoints->OtherUp(ex->endpoint)
                           ? std::chrono::milliseconds(0)
                           : policy.Delay(ex->attempt);
    REELFS_LOG_DEBUG(kLog, "{} attempt {} failed ({}); retrying in {} ms", ex->req.what,
                     ex->attempt, failure.ToString(), delay.count());
    retry_timers.emplace(std::chrono::steady_clock::now() + delay, ex);
    return;
  }
  if (ex->attempt > 1) {
    failure = failure.WithContext("after " + std::to_string(ex->attempt) + " attempts");
  }
  Complete(ex, std::move(failure));
}

void Transport::Impl::Complete(Exchange* ex, Result<HttpResponse> result) {
  auto it = live.find(ex);
  std::unique_ptr<Exchange> owned;
  if (it != live.end()) {
    owned = std::move(it->second);
    live.erase(it);
    if (owned->req.cancel) --live_with_token;
  }
  if (!result.ok() && !ex->probe_endpoint) failures.fetch_add(1, std::memory_order_relaxed);
  HttpCallback done = std::move(ex->done);
  if (owned) ReleaseEasy(*owned);
  owned.reset();  // request memory is released before the caller learns it is done
  done(std::move(result));
}

}  // namespace reelfs::s3

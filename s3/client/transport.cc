#include "s3/client/transport.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/log.h"
#include "common/thread_annotations.h"
#include "s3/client/curl_handles.h"
#include "s3/client/curl_status.h"
#include "s3/client/redact.h"
#include "s3/protocol/crypto.h"
#include "s3/protocol/error_codec.h"
#include "s3/protocol/range.h"

namespace reelfs::s3 {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

constexpr std::string_view kLog = "s3";
constexpr size_t kMaxErrorBody = 64 * 1024;   // error documents are small; don't buffer junk
constexpr long kCurlBufferSize = 256 * 1024;  // fewer, larger write callbacks on fast links

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string StripQuotes(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

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

}  // namespace

const std::string* HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

// One submitted operation: its request, completion, and the state kept across attempts.
struct Exchange {
  HttpRequest req;
  HttpCallback done;
  std::span<const std::byte> upload;  // req.body or req.owned_body
  std::string payload_hash;
  std::string content_md5;
  int attempt = 0;  // attempts started

  // Per attempt (reset by StartAttempt).
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
  uint64_t skip = 0;  // body bytes of this attempt to drop (a 200 answer to a ranged request)
  uint64_t keep = std::numeric_limits<uint64_t>::max();  // body bytes of this attempt to keep

  // Across attempts (streamed bodies).
  uint64_t delivered = 0;    // bytes handed to buffer/sink
  bool shape_known = false;  // op_offset/expected/object_size set from a first 2xx response
  uint64_t op_offset = 0;    // object offset of the first byte delivered
  uint64_t expected = 0;     // body bytes the whole operation delivers
  uint64_t object_size = 0;
  std::string first_etag;

  bool Cancelled() const { return req.cancel && req.cancel->cancelled(); }
  bool Streaming() const { return req.stream_body; }
  const std::string* Header(std::string_view name) const {
    for (const auto& [k, v] : response_headers) {
      if (k == name) return &v;
    }
    return nullptr;
  }

  // Called once the final response's headers are in: decides which body bytes are kept.
  Status OnHeadersComplete() {
    if (!Streaming() || status < 200 || status >= 300) return Status::Ok();
    const std::string* etag = Header("etag");
    const std::string this_etag = etag ? StripQuotes(*etag) : std::string();
    if (shape_known && !first_etag.empty() && !this_etag.empty() && this_etag != first_etag) {
      return Status(StatusCode::kFailedPrecondition,
                    "object changed while resuming an interrupted transfer");
    }
    uint64_t first = 0, length = 0, total = 0;
    if (status == 206) {
      const std::string* cr = Header("content-range");
      if (cr == nullptr) return Status::Internal("206 response without Content-Range");
      auto parsed = ParseContentRange(*cr);
      if (!parsed.ok()) return parsed.status();
      const uint64_t want = attempt_range ? attempt_range->offset : 0;
      if (parsed->first != want) {
        return Status::Internal("server answered a different range than requested: " + *cr);
      }
      first = parsed->first;
      length = parsed->last - parsed->first + 1;
      total = parsed->total_known ? parsed->total : 0;
      skip = 0;
      keep = length;
    } else {
      const std::string* cl = Header("content-length");
      uint64_t content_length = 0;
      if (cl != nullptr) content_length = std::strtoull(cl->c_str(), nullptr, 10);
      total = content_length;
      if (attempt_range) {
        // A server that ignores Range sends the whole object: take the requested slice.
        first = attempt_range->offset;
        skip = attempt_range->offset;
        length = first < total ? std::min(attempt_range->length, total - first) : 0;
        keep = length;
      } else {
        first = 0;
        skip = 0;
        length = content_length;
        keep = cl != nullptr ? content_length : std::numeric_limits<uint64_t>::max();
      }
      if (cl == nullptr) total = 0;
    }
    if (!shape_known) {
      shape_known = true;
      op_offset = first;
      expected = length;
      object_size = total;
      first_etag = this_etag;
      // Without a length (chunked 200), a broken transfer cannot be resumed.
      if (status == 200 && !attempt_range && Header("content-length") == nullptr) {
        expected = std::numeric_limits<uint64_t>::max();
      }
    }
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
    if (!Streaming() || status < 200 || status >= 300) {
      if (status >= 300 && body.size() + n > kMaxErrorBody) return n;  // keep the head only
      body.append(data, n);
      return n;
    }
    size_t consumed = 0;
    if (skip > 0) {
      const size_t drop = static_cast<size_t>(std::min<uint64_t>(skip, n));
      skip -= drop;
      consumed = drop;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(keep, n - consumed));
    keep -= take;
    if (take > 0) {
      std::span<const std::byte> chunk(reinterpret_cast<const std::byte*>(data) + consumed, take);
      if (req.sink) {
        Status st;
        try {
          st = req.sink(chunk);
        } catch (...) {
          st = Status::Internal("GetObject sink threw an exception");
        }
        if (!st.ok()) {
          abort_status = std::move(st);
          return 0;
        }
      } else {
        if (delivered + take > req.buffer.size()) {
          abort_status = Status::OutOfRange(req.what + ": body is larger than the buffer (" +
                                            std::to_string(req.buffer.size()) + " bytes)");
          return 0;
        }
        std::memcpy(req.buffer.data() + delivered, chunk.data(), take);
      }
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
    std::string_view trimmed = Trim(line);
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

namespace {

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
  return static_cast<Exchange*>(userdata)->OnRead(out, size * nmemb);
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
  if (ex->Cancelled()) {
    if (ex->abort_status.ok()) ex->abort_status = Status::Cancelled(ex->req.what + ": cancelled");
    return 1;
  }
  return 0;
}

}  // namespace

struct Transport::Impl {
  explicit Impl(TransportOptions o)
      : options(std::move(o)), policy(options.retry, options.jitter) {}

  // Members in teardown order matter: `loop` is declared last so it is joined first, while the
  // multi handle, the pool and the exchanges it uses are still alive.
  TransportOptions options;
  RetryPolicy policy;
  CurlGlobal curl_global;  // keeps libcurl initialized for as long as any handle exists
  CurlMulti multi;
  std::vector<CurlEasy> idle_easies;  // loop thread only
  // Exchanges in flight (in curl) or waiting for a retry; owned here, loop thread only.
  std::unordered_map<Exchange*, std::unique_ptr<Exchange>> live;
  std::multimap<SteadyTime, Exchange*> retry_timers;  // loop thread only

  // Lock order: `mu` is a leaf; never held while calling libcurl or a completion.
  std::mutex mu;
  std::deque<std::unique_ptr<Exchange>> submitted GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;

  std::atomic<uint64_t> requests{0}, attempts{0}, retries{0}, failures{0}, bytes_sent{0},
      bytes_received{0};
  std::jthread loop;  // last: joined before everything above is destroyed

  void Run();
  void StartAttempt(std::unique_ptr<Exchange> owned_or_null, Exchange* ex);
  Status ConfigureEasy(Exchange& ex);
  void OnAttemptDone(Exchange* ex, CURLcode code);
  void Complete(Exchange* ex, Result<HttpResponse> result);
  Status HttpError(const Exchange& ex) const;
};

Result<std::unique_ptr<Transport>> Transport::Create(TransportOptions options) {
  if (options.endpoint.host.empty()) return Status::InvalidArgument("S3 endpoint has no host");
  auto impl = std::make_unique<Impl>(std::move(options));
  REELFS_RETURN_IF_ERROR(impl->curl_global.status());
  impl->multi.reset(curl_multi_init());
  if (!impl->multi) return Status::Internal("curl_multi_init failed");
  const long conns = std::max(1, impl->options.max_connections);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAX_HOST_CONNECTIONS, conns);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAX_TOTAL_CONNECTIONS, conns);
  curl_multi_setopt(impl->multi.get(), CURLMOPT_MAXCONNECTS, conns);
  Impl* raw = impl.get();
  impl->loop = std::jthread([raw] { raw->Run(); });
  return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Transport::~Transport() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi.get());
  impl_->loop.join();
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

void Transport::Submit(HttpRequest request, HttpCallback done) {
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
  const uint64_t threshold = impl_->options.unsigned_payload_min_bytes;
  if (ex->upload.empty()) {
    ex->payload_hash = std::string(kEmptyPayloadSha256);
  } else if (threshold > 0 && ex->upload.size() >= threshold) {
    ex->payload_hash = std::string(kUnsignedPayload);
  } else {
    ex->payload_hash = Sha256Hex(body_text);
  }
  if (ex->req.content_md5) ex->content_md5 = Base64Encode(Md5(body_text));
  impl_->requests.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->stopping) {
      impl_->submitted.push_back(std::move(ex));
    }
  }
  if (ex) {  // not queued: the transport is shutting down
    impl_->failures.fetch_add(1, std::memory_order_relaxed);
    ex->done(Status::Cancelled("S3 client is shutting down"));
    return;
  }
  curl_multi_wakeup(impl_->multi.get());
}

void Transport::Impl::Run() {
  while (true) {
    std::deque<std::unique_ptr<Exchange>> fresh;
    bool stop = false;
    {
      std::lock_guard lock(mu);
      fresh.swap(submitted);
      stop = stopping;
    }
    if (stop) {
      for (auto& ex : fresh) {
        Exchange* raw = ex.get();
        live.emplace(raw, std::move(ex));
        Complete(raw, Status::Cancelled(raw->req.what + ": S3 client is shutting down"));
      }
      break;
    }
    for (auto& ex : fresh) {
      Exchange* raw = ex.get();
      StartAttempt(std::move(ex), raw);
    }

    // Retries whose delay is over, and waiting retries that were cancelled meanwhile.
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

    int running = 0;
    curl_multi_perform(multi.get(), &running);
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

    // Sleep until there is socket activity, a wakeup, the next retry, or 1 s (cancellation
    // of waiting retries is noticed at least that often).
    int timeout_ms = 1000;
    if (!retry_timers.empty()) {
      const auto until = retry_timers.begin()->first - std::chrono::steady_clock::now();
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms + 1, 0, timeout_ms));
    }
    if (!fresh.empty() || running > 0 || timeout_ms > 0) {
      curl_multi_poll(multi.get(), nullptr, 0, timeout_ms, nullptr);
    }
  }

  // Shutdown: every operation still known gets its one completion.
  for (auto& [raw, ex] : live) {
    if (ex->easy) curl_multi_remove_handle(multi.get(), ex->easy.get());
  }
  retry_timers.clear();
  std::vector<Exchange*> pending;
  for (auto& [raw, ex] : live) pending.push_back(raw);
  for (Exchange* ex : pending) {
    Complete(ex, Status::Cancelled(ex->req.what + ": S3 client is shutting down"));
  }
}

Status Transport::Impl::ConfigureEasy(Exchange& ex) {
  CURL* e = ex.easy.get();
  const RequestTarget target = BuildRequestTarget(options.endpoint, options.addressing,
                                                  ex.req.bucket, ex.req.key, ex.req.query);
  // Sign this attempt (fresh x-amz-date).
  SignableRequest signable;
  signable.method = ex.req.method;
  signable.encoded_path = target.encoded_path;
  signable.raw_query = target.raw_query;
  signable.headers.emplace_back("host", target.host_header);
  for (const auto& h : ex.req.headers) signable.headers.push_back(h);
  if (!ex.content_md5.empty()) signable.headers.emplace_back("content-md5", ex.content_md5);
  ex.attempt_range.reset();
  if (ex.req.stream_body && ex.shape_known && ex.delivered > 0) {
    // Resume after the bytes already delivered, and only from the same object version.
    ex.attempt_range = ByteRange{ex.op_offset + ex.delivered, ex.expected - ex.delivered};
    if (!ex.first_etag.empty()) {
      const bool has_if_match = std::any_of(ex.req.headers.begin(), ex.req.headers.end(),
                                            [](const auto& h) { return h.first == "if-match"; });
      if (!has_if_match) signable.headers.emplace_back("if-match", "\"" + ex.first_etag + "\"");
    }
  } else if (ex.req.range) {
    ex.attempt_range = ex.req.range;
  }
  if (ex.attempt_range)
    signable.headers.emplace_back("range", FormatRangeHeader(*ex.attempt_range));
  signable.payload_hash = ex.payload_hash;
  if (!options.credentials.empty()) {
    SigV4Params params;
    params.region = options.region;
    params.time = std::chrono::system_clock::now();
    SignRequest(signable, options.credentials, params);
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
  if (LogEnabled(LogLevel::kTrace, "curl")) {
    curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, &CurlDebug);
    curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  }

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
  return Status::Ok();
}

void Transport::Impl::StartAttempt(std::unique_ptr<Exchange> owned, Exchange* ex) {
  if (owned) live.emplace(ex, std::move(owned));
  if (ex->Cancelled()) {
    Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
    return;
  }
  ++ex->attempt;
  attempts.fetch_add(1, std::memory_order_relaxed);
  if (ex->attempt > 1) retries.fetch_add(1, std::memory_order_relaxed);
  // Per-attempt state.
  ex->upload_offset = 0;
  ex->status = 0;
  ex->headers_done = false;
  ex->response_headers.clear();
  ex->body.clear();
  ex->abort_status = Status::Ok();
  ex->skip = 0;
  ex->keep = std::numeric_limits<uint64_t>::max();
  ex->error_buffer[0] = '\0';

  if (!idle_easies.empty()) {
    ex->easy = std::move(idle_easies.back());
    idle_easies.pop_back();
    curl_easy_reset(ex->easy.get());
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
    idle_easies.push_back(std::move(ex->easy));
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
  // The easy handle goes back to the pool; its connection stays in the multi's cache.
  ex->headers.reset();
  idle_easies.push_back(std::move(ex->easy));

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
  } else if (ex->status < 200 || ex->status >= 300) {
    failure = HttpError(*ex);
    outcome.kind = AttemptOutcome::Kind::kHttpResponse;
    outcome.http_status = ex->status;
    outcome.s3_code = failure.detail().s3_code;
  } else if (ex->req.stream_body && ex->shape_known &&
             ex->expected != std::numeric_limits<uint64_t>::max() && ex->delivered < ex->expected) {
    // The connection closed early but cleanly (no Content-Length check by curl on 200 + slicing).
    failure = Status::Unavailable(ex->req.what + ": body ended early");
    outcome.kind = AttemptOutcome::Kind::kConnectionError;
  }

  if (failure.ok()) {
    HttpResponse resp;
    resp.status = ex->status;
    resp.headers = std::move(ex->response_headers);
    resp.body = std::move(ex->body);
    resp.streamed_bytes = ex->delivered;
    resp.object_size = ex->object_size;
    Complete(ex, std::move(resp));
    return;
  }
  if (ex->Cancelled()) {
    Complete(ex, Status::Cancelled(ex->req.what + ": cancelled"));
    return;
  }
  // A streamed body that broke part way resumes only when its shape is known.
  const bool resumable = !ex->req.stream_body || ex->delivered == 0 ||
                         (ex->shape_known && ex->expected != std::numeric_limits<uint64_t>::max());
  if (resumable && policy.ShouldRetry(outcome, ex->attempt)) {
    const auto delay = policy.Delay(ex->attempt);
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
  }
  if (!result.ok()) failures.fetch_add(1, std::memory_order_relaxed);
  HttpCallback done = std::move(ex->done);
  if (owned && owned->easy) idle_easies.push_back(std::move(owned->easy));
  owned.reset();  // request memory is released before the caller learns it is done
  done(std::move(result));
}

}  // namespace reelfs::s3

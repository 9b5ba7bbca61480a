// Transport: signed S3 HTTP exchanges over libcurl's multi interface, driven by one event-loop
// thread, with retries.
//
// Submit() queues a request and wakes the loop (curl_multi_wakeup); the loop thread signs each
// attempt (fresh x-amz-date), runs it on a pooled easy handle (connections are kept in the multi
// handle's cache and reused), and calls the completion exactly once: with the response for 2xx,
// else with a Status (S3 error documents decoded; curl failures through CurlToStatus). Failed
// attempts the RetryPolicy allows are re-run after a full-jitter delay kept in the loop's timer
// queue (the loop never sleeps). A streamed body (GetObject) that broke part way is resumed from
// the bytes already delivered with an adjusted Range and If-Match on the first response's ETag.
// Without a (strong) ETag a resume could splice two versions of the object, so such a transfer
// starts over from the first byte instead (into a buffer), or fails (a sink cannot take back
// what it was given).
//
// Thread-safety: Submit() and counters() may be called from any thread. Completions run on the
// loop thread; they must not block and must not wait on another request of the same Transport.
// A completion may destroy the Transport (dropping the last reference to its owner): the
// destructor then returns at once and the loop thread finishes the shutdown on its own, completing
// the remaining operations with kCancelled. Destroyed from any other thread, it joins the loop
// (every completion has run when it returns).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cancel.h"
#include "common/result.h"
#include "s3/client/request_target.h"
#include "s3/client/retry_policy.h"
#include "s3/protocol/sigv4.h"
#include "s3/types.h"

namespace reelfs::s3 {

class RefreshingCredentials;

class EndpointSet;

struct TransportOptions {
  Endpoint endpoint;  // used when `endpoints` is not set
  // Several endpoints, shared by the client's transports (s3/client/endpoint_set.h): each attempt
  // goes to a healthy one, a failed attempt is retried on another.
  std::shared_ptr<EndpointSet> endpoints;
  Addressing addressing = Addressing::kPath;
  std::string region = "us-east-1";
  Credentials credentials;
  std::shared_ptr<RefreshingCredentials> credential_source;  // set: signs with its Current()
  int max_connections = 64;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds idle_timeout{30'000};  // no byte moved for this long: abort attempt
  std::chrono::milliseconds total_timeout{0};      // per attempt; 0: none
  RetryOptions retry;
  RetryPolicy::JitterSource jitter;  // empty: random
  std::string ca_bundle;
  bool verify_tls = true;
  std::string user_agent;
  uint64_t unsigned_payload_min_bytes = 0;  // 0: always sign the body's SHA-256
};

// The credentials a request is signed with now: credential_source's current ones when it is set
// (they may have been refreshed since the last request), else `credentials`. Empty: unsigned.
[[nodiscard]] Credentials CurrentCredentials(const TransportOptions& options);

struct HttpResponse;

struct HttpRequest {
  std::string method = "GET";
  std::string bucket;
  std::string key;
  QueryParams query;
  std::vector<std::pair<std::string, std::string>> headers;  // lowercase names
  std::span<const std::byte> body;                           // caller-owned upload body
  std::string owned_body;  // used instead of `body` when non-empty (XML request documents)
  bool content_md5 = false;
  // Response body delivery. With stream_body, a 2xx body goes to `buffer` (or `sink` if set)
  // instead of HttpResponse::body; error bodies are always collected for decoding.
  bool stream_body = false;
  std::span<std::byte> buffer;
  std::function<Status(std::span<const std::byte>)> sink;
  std::optional<ByteRange> range;  // sent as Range; a 200 answer is sliced to it
  std::shared_ptr<CancellationToken> cancel;
  std::string what;  // "GetObject b/k", prefixed to error messages
  // Runs on a 2xx response before it completes. A failure is handled like an error response (its
  // detail().s3_code and http_status go to the retry policy): S3 can answer 200 and then send an
  // <Error> body (CompleteMultipartUpload, CopyObject), and InternalError there is retryable.
  std::function<Status(const HttpResponse&)> validate;
  // One attempt only, whatever the RetryPolicy says: an S3-over-RDMA GET must not be re-sent
  // behind its caller's back, since a timed-out attempt may still be written into the window by
  // the server (rdmaio fences it; a silent retry would hide that it timed out).
  bool single_attempt = false;
  // A GET sent with If-Match: the ETag (stripped) every 2xx answer must carry. A server that
  // ignores If-Match answers another version's bytes; this catches it before any byte is
  // delivered (kFailedPrecondition + PreconditionFailed, as the 412 it should have sent).
  std::string pinned_etag;
  // Every attempt goes to this endpoint of the transport's set (index), never another: an
  // S3-over-RDMA GET names a session only that gateway holds. nullopt: the set's rule.
  std::optional<size_t> endpoint;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // lowercase names, final response
  std::string body;                                          // unless streamed
  uint64_t streamed_bytes = 0;                               // delivered to buffer/sink
  // Streamed GET: total object size (Content-Range total, a 200's Content-Length, or the length
  // of a 200 body sent without one); 0 when unknown (a 206 with "bytes a-b/*").
  uint64_t object_size = 0;

  // First header with that (lowercase) name, or nullptr.
  const std::string* Header(std::string_view name) const;
};

using HttpCallback = std::function<void(Result<HttpResponse>)>;

struct TransportCounters {
  uint64_t requests = 0;        // operations submitted
  uint64_t attempts = 0;        // HTTP attempts started (requests + retries)
  uint64_t retries = 0;         // attempts that were retries
  uint64_t failures = 0;        // operations that ended with an error
  uint64_t bytes_sent = 0;      // request body bytes
  uint64_t bytes_received = 0;  // response body bytes
};

class Transport {
 public:
  static Result<std::unique_ptr<Transport>> Create(TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  void Submit(HttpRequest request, HttpCallback done);
  TransportCounters counters() const;
  const TransportOptions& options() const;

 private:
  struct Impl;
  explicit Transport(std::shared_ptr<Impl> impl);
  // Shared with the loop thread, which keeps it alive until the loop has finished (see above).
  std::shared_ptr<Impl> impl_;
};

}  // namespace reelfs::s3

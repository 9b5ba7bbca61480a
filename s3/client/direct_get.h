// DirectGet: ranged GETs into a caller's buffer over plain http, received with recv(2) straight
// into that buffer (docs/s3-client.md "Direct GETs").
//
// libcurl receives into its own buffer and hands each chunk to a write callback, which copies it
// into the caller's: one copy of every body byte that a receiver owning its socket does without.
// This is that receiver, for one exchange shape (raw_http.h): a signed GET with Range (and
// If-Match) answered 206 with the range asked for. It decides no error: any other answer, and any
// failure to connect, send or receive, hands the request to the fallback (S3Client's libcurl
// path, whose retries, resumption and error mapping are the real ones, and which writes the
// buffer again from its first byte). Only a cancel ends a request here (kCancelled).
//
// Requests wait in one FIFO queue for a receiver thread (blocking I/O, one request at a time per
// thread, threads started as needed up to `max_threads`: the client's max_connections, the
// same bound on concurrent GETs libcurl's path has); connections are kept alive per endpoint
// and checked before reuse (a reused one that fails before its head is retried once on a new one).
//
// Thread-safety: all methods from any thread. Completions and fallbacks run on a receiver thread.
// The destructor completes queued and running requests with kCancelled (never the fallback) and
// joins the receivers, except the calling thread when it is one of them (a completion that drops
// the last reference to the client): that one finishes on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "s3/client/transport.h"
#include "s3/object_store.h"

namespace reelfs::s3 {

struct DirectGetCounters {
  uint64_t requests = 0;   // GETs taken by the direct receiver
  uint64_t bytes = 0;      // body bytes it received into callers' buffers
  uint64_t fallbacks = 0;  // of `requests`, handed to the libcurl path
  uint64_t connects = 0;   // connections it opened (every other request reused one)
};

class DirectGet {
 public:
  using Fallback = std::function<void(const GetObjectRequest&, Callback<GetObjectResult>)>;

  // nullptr when some endpoint is not plain http (TLS stays with libcurl), min_bytes is 0, a
  // proxy is configured for libcurl (http_proxy, all_proxy, ALL_PROXY), or the options set a
  // total_timeout (only libcurl's path enforces one).
  // At most `max_threads` requests run at once (and as many idle connections are kept per
  // endpoint); more wait in the queue.
  static std::unique_ptr<DirectGet> Create(const TransportOptions& options, uint64_t min_bytes,
                                           int max_threads, Fallback fallback);
  ~DirectGet();
  DirectGet(const DirectGet&) = delete;
  DirectGet& operator=(const DirectGet&) = delete;

  // Whether `req` has the shape taken here: a range of at least min_bytes into a buffer that
  // holds it; no sink, extra headers or pinned endpoint.
  bool Takes(const GetObjectRequest& req) const;
  // `req` must satisfy Takes. Its buffer and cancel token are used until `done` runs.
  void Submit(const GetObjectRequest& req, Callback<GetObjectResult> done);
  DirectGetCounters counters() const;

 private:
  struct Impl;
  explicit DirectGet(std::shared_ptr<Impl> impl);
  // Shared with the receiver threads, which outlive this object when one of them destroys it.
  std::shared_ptr<Impl> impl_;
};

}  // namespace reelfs::s3

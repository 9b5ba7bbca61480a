// DataChannel: fetch a byte range of an object straight into a registered memory window, and
// (where the transport can) upload a window as an object or one part.
//
// This is the interface the FUSE prefetcher (and later the GPU side channel) reads through when an
// RDMA data path is configured (docs/architecture.md "S3 over RDMA: control and data"). Control
// stays S3: the channel sends a signed ranged GET carrying an RDMA token for the window, the server
// writes the bytes into the window and answers with an empty body; the HTTP response is the
// completion.
//
// Implementations: rdmaio/channel (RcChannel: hipobj-rc-v2; DcChannel: cuObject DC; over
// rdma-core through rdmaio/verbs' providers), and fakes for tests. Upper layers see only this
// header and registered_memory.h.
//
// Contract (the same shape as s3::ObjectStore, so the prefetcher can hold either):
//   * Fetch returns at once and calls `done` exactly once, possibly on an internal thread; `done`
//     must not block.
//   * On success the bytes are at the start of the window; `via` says how they came. Declines
//     and RDMA failures are handled inside the channel (reply classifier, per-endpoint fallback to
//     HTTP, docs/protocols/rdma.md): the caller never sees them, only the path in `via`.
//   * Errors use common/status.h codes by retry semantics and reasons, with http_status / s3_code
//     in the detail: kFailedPrecondition + kArchived for an archived object (403
//     InvalidObjectState), + kObjectChanged for an If-Match mismatch, + kWindowQuarantined /
//     kWindowBusy for a window the channel refuses; kNotFound, kCancelled, kUnavailable,
//     kDeadlineExceeded.
//   * Fencing rule: when `done` runs, the server can no longer write into the window. On success
//     the response proves it; after a failure, timeout or cancellation the channel fences the
//     window (revokes its rkey, or waits out a lease) *before* calling `done`. So the caller may
//     reuse the memory as soon as `done` has run, and must not touch it before.
//   * Cancellation is a request, not a guarantee of speed: `done` then runs with kCancelled once
//     the window is fenced (or with the result, if it won the race).
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/cancel.h"
#include "common/result.h"
#include "rdmaio/registered_memory.h"

namespace reelfs::rdmaio {

// A slice of a registered region: the destination of one fetch.
struct RegisteredWindow {
  std::shared_ptr<RegisteredRegion> region;  // kept alive until the fetch completes
  uint64_t offset = 0;                       // into the region
  uint64_t length = 0;                       // bytes wanted; offset + length <= region->length()
};

struct FetchRequest {
  std::string bucket;
  std::string key;
  uint64_t object_offset = 0;  // first byte of the object to fetch
  // Where the bytes go and how many are wanted. A range past the end of the object is short, as
  // with HTTP ranges. Longer than the channel's per-request limit (a DC token holds < 4 GiB;
  // vgwrdma takes <= 1 GiB) is kInvalidArgument: callers fetch in parts.
  RegisteredWindow window;
  std::string if_match;                       // ETag the object must still have, empty for none
  std::shared_ptr<CancellationToken> cancel;  // optional
  // The window is memory another process may write during and after the fetch (a side-channel
  // client's buffer): what is read back from it is that process's, not the server's, so a layer
  // above the transport (the local cache) must not keep it.
  bool client_writable = false;
};

enum class DataPath : uint8_t {
  kRdma,   // the server wrote the window
  kHttp,   // the bytes came in an HTTP body (decline, ignored token, fallback) and were copied in
  kCache,  // the local cache held them (fuse/core/caching_channel.h copied them in; no request)
};

struct FetchResult {
  uint64_t bytes = 0;        // bytes now at the start of the window
  uint64_t object_size = 0;  // total object size, from the response
  std::string etag;          // quotes stripped
  DataPath via = DataPath::kRdma;
};

using FetchCallback = std::function<void(Result<FetchResult>)>;

// One PutObject, or one UploadPart when part_number > 0.
struct PutRequest {
  std::string bucket;
  std::string key;
  int part_number = 0;    // 1..10000 for UploadPart; 0 for PutObject
  std::string upload_id;  // UploadPart only
  // The payload: `window.length` bytes (1 .. 5 GiB) read by the server out of the window, or
  // copied from it as the HTTP body (host memory only).
  RegisteredWindow window;
  std::string content_type;                   // PutObject only; empty: none
  std::shared_ptr<CancellationToken> cancel;  // optional
};

struct PutResult {
  std::string etag;  // of the object or the part, quotes stripped
  uint64_t bytes = 0;
  DataPath via = DataPath::kRdma;
};

using PutCallback = std::function<void(Result<PutResult>)>;

// The most one PUT or part may carry (S3's limit; the gateway answers 413 above it).
inline constexpr uint64_t kMaxPutBytes = 5ull << 30;

class DataChannel {
 public:
  virtual ~DataChannel() = default;

  virtual void Fetch(FetchRequest request, FetchCallback done) = 0;

  // Uploads the window (see above). This default is a transport without uploads: kUnimplemented,
  // answered on the caller's thread, nothing sent.
  virtual void Put(PutRequest request, PutCallback done) {
    done(Status::Unimplemented("this data channel does not upload (PUT " + request.bucket + "/" +
                               request.key + ")"));
  }

  // The registrar for memory this channel can fetch into (regions are bound to the channel's
  // protection domain: a region from another channel's registrar is kInvalidArgument in Fetch).
  virtual MemoryRegistrar& registrar() = 0;
};

}  // namespace reelfs::rdmaio

// ControlPlane: the signed S3 requests an RDMA data channel sends, without rdmaio knowing S3.
//
// S3 over RDMA keeps control in S3 (docs/protocols/rdma.md): a ranged GET carrying x-amz-rdma-*
// headers, a PUT / UploadPart carrying them (empty body: the server RDMA-reads the payload;
// docs/protocols/rdma-put.md) or carrying the payload itself (the HTTP fallback), and for
// hipobj-rc-v2 the POSTs to /.hipobj-rc/{prepare,ready,cancel}. rdmaio may not include s3/ or
// libcurl (docs/architecture.md "Module map"), so the channel sends them through this interface,
// and an adapter at the composition level implements it over reelfs::s3 (rdmaio/s3bridge/).
//
// What the channel needs back is what the reply classifier reads: the HTTP status (of *any*
// answer, errors included: a 501 or 503 is a verdict, not a failure), the x-amz-rdma-* response
// headers, the S3 error code, the ETag, and for a GET the body (the HTTP fallback) placed in the
// caller's destination; for a PUT the ETag.
//
// An error answer keeps, next to the status and code the classifier reads, the Status the S3
// layer made of it (`error`: code, reason, detail), so a channel reports that Status as it came
// instead of re-reading the HTTP status (rdmaio/channel/channel_replies.h).
//
// Contract: each call returns at once and calls `done` exactly once, possibly on an internal
// thread; `done` must not block. A Status instead of a ControlReply means no HTTP answer came
// back (timeout, connection lost, cancelled: kDeadlineExceeded / kUnavailable / kCancelled), or
// the request could not be sent (kInvalidArgument).
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/cancel.h"
#include "common/result.h"

namespace reelfs::rdmaio {

// (lowercase name, value), as rdmaio/wire's HeaderList.
using ControlHeaders = std::vector<std::pair<std::string, std::string>>;

struct ControlReply {
  int http_status = 0;
  ControlHeaders rdma_headers;  // the x-amz-rdma-* response headers, lowercase names
  std::string s3_error_code;    // <Code> of an error answer, else empty
  std::string etag;             // ETag header, quotes stripped; empty if none
  uint64_t body_bytes = 0;      // GET: body bytes placed at the start of the destination
  uint64_t object_size = 0;     // GET: from Content-Range / Content-Length; 0 when unknown
  // A non-2xx answer as the S3 layer classified it (common/s3_error_table.h); OK for a 2xx, or
  // when the plane has no such Status (a test's scripted answer): the channel then classifies
  // http_status and s3_error_code with the same table.
  Status error;
};

struct ControlGet {
  std::string bucket;
  std::string key;
  uint64_t offset = 0;
  uint64_t length = 0;                        // > 0; sent as Range: bytes=offset-(offset+length-1)
  ControlHeaders headers;                     // extra headers, signed with the rest
  std::string if_match;                       // empty: none
  std::span<std::byte> destination;           // where a body goes (at most `length` bytes of it)
  std::shared_ptr<CancellationToken> cancel;  // optional
};

// PutObject, or UploadPart when part_number > 0.
struct ControlPut {
  std::string bucket;
  std::string key;
  int part_number = 0;    // 1..10000 for UploadPart, 0 for PutObject
  std::string upload_id;  // UploadPart only
  // Extra headers, signed with the rest. A PUT carrying any is sent exactly once (no retry): the
  // server may be reading the caller's window for a timed-out attempt, and a silent resend of a
  // session PUT would run a second transfer. A PUT without them (a plain body) may be retried.
  ControlHeaders headers;
  std::span<const std::byte> body;  // the payload; empty for an RDMA PUT (must outlive `done`)
  std::string content_type;         // PutObject only; empty: none
  std::shared_ptr<CancellationToken> cancel;  // optional
};

struct ControlPost {
  std::string path;        // e.g. wire::kRcPreparePath ("/.hipobj-rc/prepare")
  ControlHeaders headers;  // signed
};

using ControlCallback = std::function<void(Result<ControlReply>)>;

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;

  // The endpoint this plane talks to ("http://127.0.0.1:7070"): the key of per-endpoint state.
  virtual const std::string& endpoint() const = 0;

  virtual void Get(ControlGet request, ControlCallback done) = 0;
  // Answers of any status come back as a ControlReply (etag set on success). A plane for a
  // channel that only reads may keep this default (kUnimplemented), so test fakes of read-only
  // channels need not grow a PUT.
  virtual void Put(ControlPut request, ControlCallback done) {
    (void)request;
    done(Status::Unimplemented("ControlPlane::Put: this control plane does not upload"));
  }
  // An empty-bodied POST; the answer's body is not needed.
  virtual void Post(ControlPost request, ControlCallback done) = 0;
};

}  // namespace reelfs::rdmaio

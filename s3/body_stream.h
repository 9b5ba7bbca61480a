// BodySource: a ranged GET whose body is left in its TCP socket, for a reader that moves it on
// with splice(2) instead of copying it through user memory (docs/semantics.md "Spliced reads").
//
// libcurl cannot hand over its socket, so this is a second, minimal HTTP/1.1 receiver beside it,
// for exactly one exchange shape: a signed GET with Range and If-Match over plain http, answered
// 206 with a Content-Length. Anything else (an error status, TLS, chunked encoding, another
// range, another ETag) is a failed Open, and the caller reads through the ObjectStore instead,
// whose retries, resumption and error mapping are the real ones. Nothing here retries.
//
// Thread-safety: BodySource::Open may be called from any thread (it blocks); a BodyStream has one
// user at a time, except Abort, which may be called from any thread while another blocks on fd().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/cancel.h"
#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

struct BodyStreamRequest {
  std::string bucket;
  std::string key;
  ByteRange range;       // length > 0
  std::string if_match;  // the ETag the body must be of (sent as If-Match and checked)
  // Cancelled: Open returns kCancelled at once (a connect or head read in progress is cut).
  std::shared_ptr<CancellationToken> cancel;
};

class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // The connected socket, positioned at the next body byte; blocking, with the idle timeout as
  // its receive timeout (a stalled server makes splice fail with EAGAIN, never hang).
  virtual int fd() const = 0;
  // Object offset of the next body byte, and body bytes not yet taken from the socket.
  virtual uint64_t offset() const = 0;
  virtual uint64_t remaining() const = 0;
  // The caller took n bytes (n <= remaining()) from fd().
  virtual void Consumed(uint64_t n) = 0;
  // Unblocks a reader of fd() (shutdown(2)); the stream is unusable afterwards.
  virtual void Abort() = 0;
};

class BodySource {
 public:
  virtual ~BodySource() = default;
  // Sends the GET and reads the answer's head; blocks up to the connect and idle timeouts.
  virtual Result<std::unique_ptr<BodyStream>> Open(const BodyStreamRequest& req) = 0;
};

}  // namespace reelfs::s3

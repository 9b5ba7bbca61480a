// The plain interface between the HTTP server (server.h, the only Beast code) and the code that
// answers requests (s3api/). Nothing here includes Boost.
//
// Flow for one request: the server reads the header and calls Handler::Start. Start either
// answers at once (a Response: auth failure, bad bucket, GET/HEAD/DELETE...) or returns an
// Exchange that receives the body chunk by chunk (never the whole body in memory) and then
// produces the Response in Finish. A Response body is either a small string or a BodySource read
// in chunks while the server writes it.
//
// Thread-safety: a Handler is called from many io threads at once; one Exchange is used by one
// connection at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/result.h"

namespace reelfs::gateway::http {

struct Request {
  std::string method;                                        // "GET"
  std::string target;                                        // "/bucket/key?x=y" exactly as sent
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  bool has_body = false;                                     // Content-Length > 0 or chunked
  std::string request_id;      // unique, set by the server; goes out as x-amz-request-id
  std::string remote_address;  // "127.0.0.1:50412"

  // First value of a header (name in lowercase), or nullptr.
  const std::string* Find(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return &v;
    }
    return nullptr;
  }
};

// A streamed response body (e.g. a file range). Read returns 0 only at the end.
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual Result<size_t> Read(std::span<char> buffer) = 0;
  // A source that is a plain file range may name it: the server then sends it with sendfile(2)
  // (page cache to socket, no copy through user space) instead of calling Read. fd < 0: no.
  struct FileRange {
    int fd = -1;
    uint64_t offset = 0;
  };
  virtual FileRange file_range() const { return {}; }
};

struct Response;
// Hands a response to the server from any thread (see Response::deferred).
using ResponseSink = std::function<void(Response)>;

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                    // used when stream is null
  std::unique_ptr<BodySource> stream;  // streamed body of exactly stream_length bytes
  uint64_t stream_length = 0;
  // HEAD (and 304): send Content-Length (of body or stream_length) but no body bytes.
  bool omit_body = false;
  // "op=GetObject bucket=b key=k" for the server's access log line.
  std::string log_context;
  // When set, everything above is ignored: the server calls it once, on the io thread, with a
  // sink, and sends whatever response is later passed to the sink (once, from any thread). For
  // answers that wait on something else (an RDMA transfer, gateway/rdma) without holding an io
  // thread; the connection reads nothing more until then.
  std::function<void(ResponseSink)> deferred;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // A chunk of the request body (de-chunked by the server). Errors are remembered by the
  // exchange and reported from Finish; the server keeps reading to keep the connection usable.
  virtual void OnBody(std::string_view chunk) = 0;
  // The body is complete.
  virtual Response Finish() = 0;
};

class Handler {
 public:
  virtual ~Handler() = default;
  using Started = std::variant<Response, std::unique_ptr<Exchange>>;
  // Must not throw (the server converts a stray exception into 500 InternalError anyway).
  virtual Started Start(Request request) = 0;
  // The answer for an exception caught by the server.
  virtual Response InternalError(const Request& request, std::string_view what) = 0;
  // The answer (400) for a request the server could not parse (bad request line or header,
  // header section over the limit); `what` is the parser's message.
  virtual Response BadRequest(const Request& request, std::string_view what) = 0;
  // Each answered request, once its last byte was written (any io thread, concurrently): for
  // metrics. Must not throw or block.
  virtual void Finished(std::string_view /*method*/, int /*status*/, uint64_t /*bytes_in*/,
                        uint64_t /*bytes_out*/, double /*seconds*/) noexcept {}
};

}  // namespace reelfs::gateway::http

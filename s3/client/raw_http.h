// Plain-http exchanges beside libcurl, for the two receivers that must own their socket: the
// spliced-read BodySource (socket_body_source.h) and the direct GET (direct_get.h). One exchange
// shape only: a signed GET with Range and If-Match, its head read (and parsed and checked by
// response_head.h), the body left in the socket for the caller.
//
// Thread-safety: pure functions and blocking calls on the caller's socket; SocketCanceller is
// safe against its token's Cancel on any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cancel.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "s3/client/request_target.h"
#include "s3/client/response_head.h"
#include "s3/client/transport.h"
#include "s3/types.h"

namespace reelfs::s3 {

// The name of the proxy variable libcurl would use for a plain-http request (http_proxy,
// all_proxy, ALL_PROXY), or nullptr when none is set: a receiver that connects directly must not
// go around it, so it stands aside.
const char* ConfiguredProxyVariable();

// The request bytes of a GET of `range` of bucket/key on `ep`, signed with the options'
// credentials (unsigned when they are empty), If-Match set when `if_match` is not empty.
std::string SignedRangedGet(const TransportOptions& options, const Endpoint& ep,
                            const std::string& bucket, const std::string& key, ByteRange range,
                            const std::string& if_match);

// Shuts down the socket it watches when `token` is cancelled, which wakes a connect, send or
// receive blocked on it. Watch(-1) before the watched fd is closed (its number may be reused).
class SocketCanceller {
 public:
  explicit SocketCanceller(std::shared_ptr<CancellationToken> token);
  ~SocketCanceller();
  SocketCanceller(const SocketCanceller&) = delete;
  SocketCanceller& operator=(const SocketCanceller&) = delete;
  void Watch(int fd);
  bool cancelled() const { return token_ != nullptr && token_->cancelled(); }

 private:
  struct Watched {
    std::mutex mu;
    int fd = -1;
  };
  const std::shared_ptr<CancellationToken> token_;
  // Shared with the token's callback, which may run on another thread until RemoveOnCancel.
  const std::shared_ptr<Watched> watched_ = std::make_shared<Watched>();
  uint64_t on_cancel_ = 0;
};

// A blocking TCP connection to `ep` (connect bounded by `connect_timeout`; every later send and
// receive by `idle_timeout`), TCP_NODELAY. `canceller` watches each socket as soon as it exists.
Result<UniqueFd> ConnectTcp(const Endpoint& ep, std::chrono::milliseconds connect_timeout,
                            std::chrono::milliseconds idle_timeout, SocketCanceller& canceller);

Status SendAll(int fd, std::string_view data);

// Reads the head and nothing after it (blocking, bounded by the receive timeout).
Result<std::string> ReadHead(int fd);

}  // namespace reelfs::s3

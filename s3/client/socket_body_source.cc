// The receiver behind BodySource: connect, send one signed GET, read the head (and only the head:
// the body stays in the socket for the caller's splice).
#include "s3/client/socket_body_source.h"

#include <cstdlib>

#include "common/scope_exit.h"
#include "common/unique_fd.h"
#include "s3/client/endpoint_set.h"
#include "s3/client/object_headers.h"
#include "s3/client/raw_http.h"
#include "s3/protocol/range.h"
#include "s3/socket_body_stream.h"

namespace reelfs::s3 {
namespace {

// What an Open says about its endpoint's health: only a failure to reach it, or its 5xx, counts
// against it; an answer this receiver cannot use (an error status, a 200, a chunked body, another
// range) says nothing, nor does a cancel.
EndpointSet::Outcome OutcomeOf(const Result<std::unique_ptr<BodyStream>>& opened) {
  if (opened.ok()) return EndpointSet::Outcome::kOk;
  const Status& s = opened.status();
  if (s.code() == StatusCode::kCancelled) return EndpointSet::Outcome::kCancelled;
  const int http = s.detail().http_status;
  if (http >= 500) return EndpointSet::Outcome::kEndpointFailure;
  if (http > 0 || s.code() == StatusCode::kDataLoss) return EndpointSet::Outcome::kOtherError;
  return EndpointSet::Outcome::kEndpointFailure;
}

class SocketBodySource final : public BodySource {
 public:
  explicit SocketBodySource(TransportOptions options) : options_(std::move(options)) {}

  Result<std::unique_ptr<BodyStream>> Open(const BodyStreamRequest& req) override {
    if (req.range.length == 0) return Status::InvalidArgument("an empty range has no body");
    EndpointSet* set = options_.endpoints.get();
    const size_t index = set != nullptr ? set->Acquire() : 0;
    const Endpoint& ep = set != nullptr ? set->endpoint(index) : options_.endpoint;
    auto opened = OpenOn(ep, req);
    if (!opened.ok() && req.cancel != nullptr && req.cancel->cancelled()) {
      // The shutdown a cancel does reads as a closed connection: say what really happened.
      opened = Status::Cancelled(std::string(opened.status().message()) + " (cancelled)");
    }
    if (set != nullptr) set->Finish(index, OutcomeOf(opened), 0, std::chrono::steady_clock::now());
    return opened;
  }

 private:
  Result<std::unique_ptr<BodyStream>> OpenOn(const Endpoint& ep, const BodyStreamRequest& req) {
    const std::string what = "GetObject " + req.bucket + "/" + req.key + " (spliced)";
    const std::string wire =
        SignedRangedGet(options_, ep, req.bucket, req.key, req.range, req.if_match);
    // A cancel shuts the socket down, which wakes a connect, send or head read blocked on it.
    SocketCanceller canceller(req.cancel);
    if (canceller.cancelled()) return Status::Cancelled(what);
    Result<UniqueFd> fd =
        ConnectTcp(ep, options_.connect_timeout, options_.idle_timeout, canceller);
    ScopeExit forget([&] { canceller.Watch(-1); });  // before `fd` closes: its number may be reused
    if (!fd.ok()) return fd.status().WithContext(what);
    if (Status s = SendAll(fd->get(), wire); !s.ok()) return s.WithContext(what);
    Result<std::string> raw = ReadHead(fd->get());
    if (!raw.ok()) return raw.status().WithContext(what);
    Result<ResponseHead> head = ParseResponseHead(*raw);
    if (!head.ok()) return head.status().WithContext(what);
    Result<RangedAnswer> answer = CheckRangedAnswer(*head, req.range, req.if_match, what);
    if (!answer.ok()) return answer.status();
    if (req.cancel != nullptr && req.cancel->cancelled()) return Status::Cancelled(what);
    return std::unique_ptr<BodyStream>(
        new SocketBodyStream(std::move(fd).value(), req.range.offset, answer->length));
  }

  const TransportOptions options_;
};

}  // namespace

std::unique_ptr<BodySource> CreateSocketBodySource(const TransportOptions& options) {
  if (ConfiguredProxyVariable() != nullptr) return nullptr;  // libcurl's proxy is not gone around
  if (options.endpoints != nullptr) {
    for (size_t i = 0; i < options.endpoints->size(); ++i) {
      if (options.endpoints->endpoint(i).scheme != "http") return nullptr;
    }
  } else if (options.endpoint.scheme != "http") {
    return nullptr;
  }
  return std::make_unique<SocketBodySource>(options);
}

}  // namespace reelfs::s3

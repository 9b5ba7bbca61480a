// The only translation unit that includes Boost.Beast (compile cost, and one place to audit).
#include "gateway/http/server.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <type_traits>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/strings.h"
#include "common/time_format.h"

namespace reelfs::gateway::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One buffer per connection, for request body chunks and for response body chunks read from
// the file (one pread, one send per chunk). Allocated on first use, uninitialized: an idle
// keep-alive connection costs no buffer.
constexpr size_t kChunkBytes = 1 << 20;
// After an early answer to a request whose body was not read (auth failure, no such bucket),
// read and drop at most this much of it, for at most kDrainTime, before closing: closing with
// unread data makes the kernel send RST, and the client loses the answer it has not read yet.
constexpr uint64_t kMaxDrainBytes = 64ull << 20;
constexpr std::chrono::seconds kDrainTime{5};
// Largest sendfile(2) call: bounds how long one connection holds its io thread before the next
// readiness wait lets others run.
constexpr size_t kSendfileBytes = 4 << 20;
constexpr char kServerName[] = "reelfs-gateway (reference gateway, not for production)";

std::string NewRequestId() {
  static const uint64_t kPrefix = std::random_device{}() & 0xFFFFFF;
  static std::atomic<uint64_t> counter{0};
  char buf[32];
  snprintf(buf, sizeof(buf), "%06llX%010llX", static_cast<unsigned long long>(kPrefix),
           static_cast<unsigned long long>(++counter));
  return buf;
}

// One connection: plain TCP (beast::tcp_stream) or TLS over it (TlsStream, --tls-cert). The
// TLS session differs in three places only: it starts with the handshake, its bodies are sent
// through the stream (sendfile(2) would bypass the encryption), and the socket is reached
// through the lowest layer.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `stream_args`: the accepted socket, and for TLS the server's ssl::context.
  template <class... StreamArgs>
  Session(Handler& handler, std::chrono::seconds idle, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        handler_(handler),
        idle_(idle),
        timer_(stream_.get_executor()) {
    // Header and body of a response go out as two writes; with Nagle the second waits for the
    // peer's (delayed) ACK of the first: up to 40 ms per small response.
    beast::error_code ec;
    Lowest().socket().set_option(tcp::no_delay(true), ec);
  }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Lowest().expires_after(self->idle_);
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) {
            // A client that does not trust the certificate, or speaks plain HTTP.
            REELFS_LOG_DEBUG("gateway.http", "TLS handshake: {}", ec.message());
            return self->Close();
          }
          self->ReadHeader();
        });
      } else {
        self->ReadHeader();
      }
    });
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_->header_limit(64 * 1024);
    Lowest().expires_after(idle_);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&Session::OnHeader, this->shared_from_this()));
  }

  void OnHeader(beast::error_code ec, size_t /*bytes*/) {
    if (ec) {
      if (ec != bhttp::error::end_of_stream && ec != beast::error::timeout &&
          ec != net::error::connection_reset && ec != net::error::eof) {
        REELFS_LOG_DEBUG("gateway.http", "read header: {}", ec.message());
        if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
          meta_ = Request{};
          meta_.request_id = NewRequestId();
          start_ = std::chrono::steady_clock::now();
          keep_alive_ = false;
          drain_ = true;  // whatever follows the bad header is unread
          return Send(handler_.BadRequest(meta_, ec.message()));
        }
      }
      return Close();
    }
    start_ = std::chrono::steady_clock::now();
    bytes_in_ = 0;
    auto& msg = parser_->get();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& field : msg) {
      req.headers.emplace_back(
          Lower(std::string_view(field.name_string().data(), field.name_string().size())),
          std::string(field.value()));
    }
    req.has_body = !parser_->is_done();
    req.request_id = NewRequestId();
    beast::error_code ep_ec;
    auto remote = Lowest().socket().remote_endpoint(ep_ec);
    if (!ep_ec)
      req.remote_address = remote.address().to_string() + ":" + std::to_string(remote.port());
    meta_.method = req.method;
    meta_.request_id = req.request_id;
    meta_.remote_address = req.remote_address;
    keep_alive_ = msg.keep_alive();
    bool expect_continue = beast::iequals(msg[bhttp::field::expect], "100-continue");

    Handler::Started started;
    try {
      started = handler_.Start(std::move(req));
    } catch (const std::exception& e) {
      started = handler_.InternalError(meta_, e.what());
    } catch (...) {
      started = handler_.InternalError(meta_, "unknown exception");
    }
    // botocore mis-parses the next response on a kept-alive connection when a request with
    // `Expect: 100-continue` got its final answer without a 100 first; so an Expect request
    // always sees 100 Continue unless the connection is closed after the answer anyway.
    if (auto* resp = std::get_if<Response>(&started)) {
      if (!parser_->is_done()) {
        keep_alive_ = false;        // unread body: the connection is spent
        drain_ = !expect_continue;  // the client sends the body without waiting for us
        return Send(std::move(*resp));
      }
      if (!expect_continue) return Send(std::move(*resp));
      pending_ = std::move(*resp);
      return SendContinue(msg.version(), [this] { Send(std::move(*pending_)); });
    }
    exchange_ = std::move(std::get<std::unique_ptr<Exchange>>(started));
    if (!expect_continue) {
      return parser_->is_done() ? FinishExchange() : ReadBody();
    }
    SendContinue(msg.version(), [this] { parser_->is_done() ? FinishExchange() : ReadBody(); });
  }

  // Writes "100 Continue", then runs next (on this session's strand, session kept alive).
  void SendContinue(unsigned version, std::function<void()> next) {
    continue_.emplace(bhttp::status::continue_, version);
    continue_->set(bhttp::field::server, kServerName);
    Lowest().expires_after(idle_);
    bhttp::async_write(
        stream_, *continue_,
        [self = this->shared_from_this(), next = std::move(next)](beast::error_code ec, size_t) {
          self->continue_.reset();
          if (ec) return self->Close();
          next();
        });
  }

  char* Buffer() {
    if (!buf_) buf_.reset(new char[kChunkBytes]);  // no value-initialization: 1 MiB memset
    return buf_.get();
  }

  void ReadBody() {
    // A body of known length (no Transfer-Encoding: chunked) is read straight from the socket
    // into the chunk buffer, up to kChunkBytes per read. The parser reads 64 KiB at a time, and
    // each read costs a recvmsg, a timer update and often a wake-up of another io thread: a PUT
    // of 1 GiB took 16 k of them and more CPU than hashing and storing it (bench/RESULTS.md).
    if (!parser_->chunked()) {
      // A boost::optional: std::optional does not convert from it.
      if (auto left = parser_->content_length_remaining()) {
        body_left_ = *left;
        // What the header's read already took from the socket comes first; bytes past the
        // body (a pipelined request) stay in buffer_ for the next ReadHeader.
        const size_t have = static_cast<size_t>(std::min<std::uint64_t>(buffer_.size(), *left));
        if (have > 0) {
          TakeBody(std::string_view(static_cast<const char*>(buffer_.data().data()), have));
          buffer_.consume(have);
        }
        return ReadBodyDirect();
      }
    }
    auto& body = parser_->get().body();
    body.data = Buffer();
    body.size = kChunkBytes;
    Lowest().expires_after(idle_);
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&Session::OnBody, this->shared_from_this()));
  }

  void OnBody(beast::error_code ec, size_t /*bytes*/) {
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      REELFS_LOG_DEBUG("gateway.http", "{} read body: {}", meta_.request_id, ec.message());
      return Close();  // the exchange (and its temporary file) goes with the session
    }
    size_t got = kChunkBytes - parser_->get().body().size;
    if (got > 0) TakeBody(std::string_view(buf_.get(), got));
    if (parser_->is_done()) return FinishExchange();
    ReadBody();
  }

  void ReadBodyDirect() {
    if (body_left_ == 0) return FinishExchange();
    Lowest().expires_after(idle_);
    stream_.async_read_some(net::buffer(Buffer(), static_cast<size_t>(std::min<std::uint64_t>(
                                                      kChunkBytes, body_left_))),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (n > 0) self->TakeBody(std::string_view(self->buf_.get(), n));
                              if (ec) {
                                // Short of Content-Length: the exchange (and its temporary file)
                                // goes with the session.
                                REELFS_LOG_DEBUG("gateway.http", "{} read body: {}",
                                                 self->meta_.request_id, ec.message());
                                return self->Close();
                              }
                              self->ReadBodyDirect();
                            });
  }

  // Hands body bytes to the exchange (until it has failed once).
  void TakeBody(std::string_view chunk) {
    bytes_in_ += chunk.size();
    body_left_ -= std::min<std::uint64_t>(body_left_, chunk.size());
    try {
      if (!failed_) exchange_->OnBody(chunk);
    } catch (const std::exception& e) {
      failed_ = true;
      failure_ = e.what();
    }
  }

  void FinishExchange() {
    Response r;
    try {
      r = failed_ ? handler_.InternalError(meta_, failure_) : exchange_->Finish();
    } catch (const std::exception& e) {
      r = handler_.InternalError(meta_, e.what());
    } catch (...) {
      r = handler_.InternalError(meta_, "unknown exception");
    }
    exchange_.reset();
    failed_ = false;
    Send(std::move(r));
  }

  void Send(Response r) {
    if (r.deferred) {
      // The answer comes later from another thread; it is sent from this session's strand.
      auto produce = std::move(r.deferred);
      produce([self = this->shared_from_this()](Response later) {
        later.deferred = nullptr;
        net::post(self->stream_.get_executor(),
                  [self, later = std::move(later)]() mutable { self->Send(std::move(later)); });
      });
      return;
    }
    res_.emplace();
    auto& res = *res_;
    res.version(11);
    res.result(static_cast<unsigned>(r.status));
    res.set(bhttp::field::server, kServerName);
    res.set("x-amz-request-id", meta_.request_id);
    res.set(bhttp::field::date, FormatHttpDate(std::chrono::system_clock::now()));
    for (auto& [name, value] : r.headers) res.insert(name, value);
    const uint64_t length = r.stream ? r.stream_length : r.body.size();
    const bool no_body_status = r.status == 204 || r.status == 304 || r.status < 200;
    if (!no_body_status) res.content_length(length);
    res.keep_alive(keep_alive_);
    small_ = std::move(r.body);
    source_ = std::move(r.stream);
    remaining_ = length;
    omit_ = r.omit_body || no_body_status || length == 0;
    status_ = r.status;
    log_context_ = std::move(r.log_context);
    bytes_out_ = 0;
    res.body().data = nullptr;
    res.body().size = 0;
    res.body().more = !omit_;
    sr_.emplace(res);
    sr_->split(true);
    Lowest().expires_after(idle_);
    bhttp::async_write_header(
        stream_, *sr_,
        beast::bind_front_handler(&Session::OnHeaderWritten, this->shared_from_this()));
  }

  void OnHeaderWritten(beast::error_code ec, size_t /*bytes*/) {
    if (ec) return Close();
    if (omit_) return Done();
    if (!kTls && source_ && source_->file_range().fd >= 0) {
      file_ = source_->file_range();
      return SendFile();
    }
    WriteBody();
  }

  // The body as sendfile(2) calls on the non-blocking socket, waiting for writability between
  // them; the header went out through the serializer, which is not used for the body.
  void SendFile() {
    const int sock = Lowest().socket().native_handle();
    beast::error_code ec;
    Lowest().socket().native_non_blocking(true, ec);
    if (ec) return Close();
    while (remaining_ > 0) {
      auto off = static_cast<off_t>(file_.offset);
      size_t want = static_cast<size_t>(std::min<uint64_t>(remaining_, kSendfileBytes));
      ssize_t n = ::sendfile(sock, file_.fd, &off, want);
      if (n > 0) {
        file_.offset += static_cast<uint64_t>(n);
        remaining_ -= static_cast<uint64_t>(n);
        bytes_out_ += static_cast<uint64_t>(n);
        if (static_cast<size_t>(n) == want) continue;
        // Short: the socket buffer is full (the next call would say EAGAIN).
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n == 0 || errno != EAGAIN) {
        REELFS_LOG_ERROR("gateway.http", "{} sendfile failed after {} bytes: {}", meta_.request_id,
                         bytes_out_, n == 0 ? std::string("short file") : std::strerror(errno));
        return Abort();  // mid-body: the only honest signal left is resetting the connection
      }
      // Wait for room, under the idle timeout (tcp_stream's timer covers only its own ops).
      timer_.expires_after(idle_);
      timer_.async_wait([self = this->shared_from_this()](beast::error_code tec) {
        if (!tec) self->Lowest().socket().cancel();
      });
      Lowest().socket().async_wait(tcp::socket::wait_write,
                                   [self = this->shared_from_this()](beast::error_code wec) {
                                     self->timer_.cancel();
                                     if (wec) return self->Close();
                                     self->SendFile();
                                   });
      return;
    }
    Done();
  }

  void WriteBody() {
    auto& body = res_->body();
    if (source_) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, remaining_));
      Result<size_t> n = Status::Internal("no read");
      try {
        n = source_->Read(std::span<char>(Buffer(), want));
      } catch (const std::exception& e) {
        n = Status::Internal(e.what());
      }
      if (!n.ok() || *n == 0) {
        REELFS_LOG_ERROR("gateway.http", "{} response body read failed after {} bytes: {}",
                         meta_.request_id, bytes_out_,
                         n.ok() ? std::string("short file") : n.status().ToString());
        return Abort();  // mid-body: the only honest signal left is resetting the connection
      }
      body.data = buf_.get();
      body.size = *n;
      remaining_ -= *n;
      bytes_out_ += *n;
      body.more = remaining_ > 0;
    } else {
      body.data = small_.data();
      body.size = small_.size();
      bytes_out_ += small_.size();
      body.more = false;
    }
    Lowest().expires_after(idle_);
    bhttp::async_write(
        stream_, *sr_,
        beast::bind_front_handler(&Session::OnBodyWritten, this->shared_from_this()));
  }

  void OnBodyWritten(beast::error_code ec, size_t /*bytes*/) {
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) return Close();
    if (sr_->is_done()) return Done();
    WriteBody();
  }

  void Done() {
    auto ms = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count() /
              1000.0;
    // Never the target: it may carry a presigned signature.
    REELFS_LOG_INFO("gateway.http", "{} {} {} status={} in={} out={} ms={:.2f}", meta_.request_id,
                    meta_.method, log_context_, status_, bytes_in_, bytes_out_, ms);
    handler_.Finished(meta_.method, status_, bytes_in_, bytes_out_, ms / 1000.0);
    sr_.reset();
    res_.reset();
    pending_.reset();
    source_.reset();
    small_.clear();
    if (drain_) return DrainAndClose();
    if (!keep_alive_) return Close();
    ReadHeader();
  }

  // Lingering close (see kMaxDrainBytes): stop sending, read until the peer closes, the limit
  // or the deadline, then close.
  void DrainAndClose() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    Lowest().expires_after(kDrainTime);
    Drain();
  }

  void Drain() {
    stream_.async_read_some(net::buffer(Buffer(), kChunkBytes),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > kMaxDrainBytes) return self->Close();
                              self->Drain();
                            });
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().socket().close(ec);
  }

  // Mid-body failure: the response cannot be completed, so the connection is reset (SO_LINGER
  // 0 makes close send RST). A client then sees ECONNRESET at once rather than a FIN that only a
  // Content-Length check tells apart from the end of the body; that is also what a gateway that
  // dies or drops the link mid-transfer looks like.
  void Abort() {
    beast::error_code ec;
    Lowest().socket().set_option(net::socket_base::linger(true, 0), ec);
    Lowest().socket().close(ec);
  }

  Stream stream_;
  Handler& handler_;
  std::chrono::seconds idle_;
  net::steady_timer timer_;      // idle timeout of SendFile's readiness waits
  BodySource::FileRange file_;   // SendFile's position
  std::unique_ptr<char[]> buf_;  // kChunkBytes, see Buffer()
  beast::flat_buffer buffer_;
  std::uint64_t body_left_ = 0;  // of a body read directly (ReadBodyDirect)
  std::optional<bhttp::request_parser<bhttp::buffer_body>> parser_;
  std::optional<bhttp::response<bhttp::empty_body>> continue_;
  std::unique_ptr<Exchange> exchange_;
  std::optional<Response> pending_;  // answer waiting for its 100 Continue to be written
  bool failed_ = false;
  std::string failure_;
  Request meta_;  // method, request id, remote address of the current request
  bool keep_alive_ = true;
  bool drain_ = false;  // answered before reading the request body: lingering close
  uint64_t drained_ = 0;
  std::chrono::steady_clock::time_point start_{};
  uint64_t bytes_in_ = 0;
  // Response state.
  std::optional<bhttp::response<bhttp::buffer_body>> res_;
  std::optional<bhttp::response_serializer<bhttp::buffer_body>> sr_;
  std::string small_;
  std::unique_ptr<BodySource> source_;
  uint64_t remaining_ = 0;
  uint64_t bytes_out_ = 0;
  bool omit_ = false;
  int status_ = 0;
  std::string log_context_;
};

}  // namespace

struct Server::Impl {
  // The acceptor and the signal set are used only on `control`: io threads run accept
  // completions concurrently, and Stop may come from any of them (or a signal). Without the
  // strand, an accept completion could re-arm async_accept on an acceptor that Stop was closing
  // on another thread (the epoll reactor then dereferences freed descriptor state).
  Impl(const ServerOptions& o, Handler& h)
      : options(o),
        handler(h),
        control(net::make_strand(ioc)),
        acceptor(control),
        signals(control) {}

  // On `control` only.
  void Accept() {
    if (stopping) return;
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
      if (!ec && !stopping) {
        if (options.max_connection_rate > 0) {
          // TCP paces itself below this rate (no qdisc needed): a remote store's cap, modelled.
          const uint64_t rate = options.max_connection_rate;
          if (::setsockopt(s.native_handle(), SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate) !=
              0) {
            REELFS_LOG_WARN("gateway.http", "SO_MAX_PACING_RATE: {}", std::strerror(errno));
          }
        }
        if (tls) {
          std::make_shared<Session<TlsStream>>(handler, options.idle_timeout, std::move(s), *tls)
              ->Start();
        } else {
          std::make_shared<Session<beast::tcp_stream>>(handler, options.idle_timeout, std::move(s))
              ->Start();
        }
      } else if (ec && ec != net::error::operation_aborted) {
        REELFS_LOG_WARN("gateway.http", "accept: {}", ec.message());
      }
      Accept();
    });
  }

  // On `control` only: no accept is re-armed after this, then the io threads are told to end.
  void StopOnStrand() {
    stopping = true;
    beast::error_code ec;
    acceptor.close(ec);
    signals.cancel(ec);
    ioc.stop();
  }

  ServerOptions options;
  Handler& handler;
  std::optional<net::ssl::context> tls;  // --tls-cert: shared, read-only, by every session
  net::io_context ioc;
  net::strand<net::io_context::executor_type> control;
  tcp::acceptor acceptor;
  net::signal_set signals;
  bool stopping = false;  // on `control` only
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Bind(const ServerOptions& options, Handler& handler) {
  auto impl = std::make_unique<Impl>(options, handler);
  if (!options.tls_cert.empty()) {
    // TLS 1.2 and 1.3 only; the certificate file may hold the chain after the leaf.
    auto& ctx = impl->tls.emplace(net::ssl::context::tls_server);
    ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    beast::error_code tls_ec;
    if (ctx.use_certificate_chain_file(options.tls_cert, tls_ec)) {
      return Status::InvalidArgument("--tls-cert " + options.tls_cert + ": " + tls_ec.message());
    }
    if (ctx.use_private_key_file(options.tls_key, net::ssl::context::pem, tls_ec)) {
      return Status::InvalidArgument("--tls-key " + options.tls_key + ": " + tls_ec.message());
    }
  }
  beast::error_code ec;
  auto address = net::ip::make_address(options.host, ec);
  if (ec) return Status::InvalidArgument("invalid listen address '" + options.host + "'");
  tcp::endpoint endpoint(address, options.port);
  auto& acc = impl->acceptor;
  auto fail = [&](std::string_view what) {
    return Status(StatusCode::kUnavailable, std::string(what) + " " + options.host + ":" +
                                                std::to_string(options.port) + ": " + ec.message());
  };
  if (acc.open(endpoint.protocol(), ec)) return fail("open socket for");
  if (acc.set_option(net::socket_base::reuse_address(true), ec)) return fail("SO_REUSEADDR on");
  if (acc.bind(endpoint, ec)) return fail("bind");
  if (acc.listen(net::socket_base::max_listen_connections, ec)) return fail("listen on");
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

std::string Server::host() const { return impl_->options.host; }

uint16_t Server::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void Server::Run() {
  // sendfile(2) has no MSG_NOSIGNAL: a peer that resets mid-body would kill the process with
  // SIGPIPE. Asio's own sends pass MSG_NOSIGNAL; EPIPE is handled where it is returned.
  std::signal(SIGPIPE, SIG_IGN);
  if (impl_->options.handle_signals) {
    impl_->signals.add(SIGINT);
    impl_->signals.add(SIGTERM);
    impl_->signals.async_wait([this](beast::error_code ec, int signo) {
      if (ec) return;
      REELFS_LOG_INFO("gateway", "signal {} received, shutting down", signo);
      Stop();
    });
  }
  net::dispatch(impl_->control, [this] { impl_->Accept(); });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl_->options.threads); ++i) {
    threads.emplace_back([this] { impl_->ioc.run(); });
  }
  impl_->ioc.run();
  for (auto& t : threads) t.join();
}

void Server::Stop() {
  net::post(impl_->control, [this] { impl_->StopOnStrand(); });
}

}  // namespace reelfs::gateway::http

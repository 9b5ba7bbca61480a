// reelfs-rdma-smoke: an RC round trip over a real verbs device through rdmaio/verbs, the check
// the Soft-RoCE VM runs (tests/rdma/in_vm.sh) and that any machine with an RDMA NIC can run.
//
// A server and a client in one process (the listener accepts on a thread while the client
// connects; after that one thread drives both ends, so every step is deterministic):
//   1. the client advertises a registered window in its connect private data; the server
//      RDMA-WRITEs 6 MiB of patterned data into it, the last write carrying an immediate (the
//      hipobj-rc-v2 completion shape), and the client checks every byte;
//   2. the server RDMA-READs 1 MiB back from the middle of the window and checks it;
//   3. a wait with nothing pending times out (kDeadlineExceeded), it does not hang;
//   4. a WRITE with a wrong rkey fails with a remote access error and leaves the QP in ERR;
//   5. a WRITE to a window the client deregistered after advertising it fails the same way;
//   6. connecting to a port nobody listens on fails with a clear kUnavailable;
//   7. the hipobj-rc-v2 shape without rdma_cm: two RcQueuePairs brought up by hand from each
//      other's endpoint, the client's sent through the real RC token codec; 2 MiB written and
//      checked; a WRITE to a peer QP that no longer exists ends by its deadline with an error
//      (retries exhausted, or kDeadlineExceeded where Soft-RoCE does not report that).
//
// Usage: reelfs-rdma-smoke --ip ADDRESS [--device NAME]   (ADDRESS of the RDMA netdev)
// Exits 0 on success, 1 on a failed check, 77 (skip) when there is no active RDMA port or no
// address to use, printing why.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/rc_connection.h"
#include "rdmaio/verbs/rc_queue_pair.h"
#include "rdmaio/verbs/registrar.h"
#include "rdmaio/verbs/verbs_status.h"
#include "rdmaio/wire/rc_token.h"
#include "tests/rdma/smoke_util.h"

namespace {

using namespace reelfs;                 // NOLINT(google-build-using-namespace): test binary
using namespace reelfs::rdmaio::verbs;  // NOLINT(google-build-using-namespace)
using namespace reelfs::rdma_smoke;     // NOLINT(google-build-using-namespace)
using std::chrono::milliseconds;

constexpr size_t kWindow = size_t{6} << 20;  // "a few MiB"
constexpr size_t kChunk = size_t{1} << 20;   // one WRITE per MiB: several WRs in flight
constexpr size_t kReadBack = size_t{1} << 20;
constexpr size_t kReadOffset = kWindow / 2 - kReadBack / 2;  // straddles two written chunks
constexpr uint32_t kCookie = 0x5eed1234;
// Software RoCE under qemu's emulation moves ~20 MB/s; these bound a hang, not a speed.
constexpr milliseconds kStepTimeout{30000};

struct Pair {
  std::unique_ptr<RcConnection> server;
  std::unique_ptr<RcConnection> client;
  std::shared_ptr<VerbsRegion> client_window;
};

// Connects a client to `listener`, advertising a fresh registered window of `window` bytes.
Pair Connect(RcListener& listener, const std::shared_ptr<ProtectionDomain>& server_pd,
             const std::string& ip, size_t window) {
  auto accepted =
      std::async(std::launch::async, [&] { return listener.Accept(server_pd, {}, kStepTimeout); });
  auto connector = Need(RcConnector::Resolve(ip, listener.port(), kStepTimeout), "resolve");
  auto client_pd = Need(ProtectionDomain::OnContext(connector->context()), "client PD");
  VerbsRegistrar registrar(client_pd);
  Pair pair;
  pair.client_window = Need(registrar.AllocateArena(window), "client window");
  Advert advert{.addr = pair.client_window->remote_addr(),
                .length = pair.client_window->length(),
                .rkey = pair.client_window->rkey(),
                .pad = 0};
  std::span<const uint8_t> private_data(reinterpret_cast<const uint8_t*>(&advert), sizeof(advert));
  pair.client = Need(
      RcConnector::Connect(std::move(connector), client_pd, private_data, kStepTimeout), "connect");
  pair.server = Need(accepted.get(), "accept");
  return pair;
}

Advert AdvertOf(const RcConnection& server) {
  Advert advert{};
  Need(server.peer_private_data().size() >= sizeof(advert)
           ? Status::Ok()
           : Status::DataLoss("connect request carried no window advertisement"),
       "advertisement");
  std::memcpy(&advert, server.peer_private_data().data(), sizeof(advert));
  return advert;
}

// Expects the next completion on `conn` to be a remote access error and the QP to be in ERR.
void ExpectAccessError(RcConnection& conn, const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<ibv_wc> wc = conn.WaitCompletion(kStepTimeout);
  if (!wc.ok()) {
    Check(false, fmt::format("{}: {}", what, wc.status().ToString()));
    return;
  }
  Status s = WcToStatus(*wc, what);
  Check(wc->status == IBV_WC_REM_ACCESS_ERR && s.code() == StatusCode::kPermissionDenied,
        fmt::format("{} completes with an error in {:.0f} ms: {}", what, Ms(t0), s.ToString()));
  Result<ibv_qp_state> state = conn.QueryState();
  Check(state.ok() && *state == IBV_QPS_ERR,
        fmt::format("{}: the QP is in ERR afterwards (state {})", what,
                    state.ok() ? static_cast<int>(*state) : -1));
}

void WriteReadVerify(RcListener& listener, const std::shared_ptr<ProtectionDomain>& server_pd,
                     const std::string& ip) {
  auto t0 = std::chrono::steady_clock::now();
  Pair pair = Connect(listener, server_pd, ip, kWindow);
  Check(true, fmt::format("RC connection established in {:.0f} ms", Ms(t0)));
  const Advert advert = AdvertOf(*pair.server);
  Check(advert.length == kWindow, "the client's window advertisement arrived intact");

  VerbsRegistrar registrar(server_pd);
  auto source = Need(registrar.AllocateArena(kWindow), "server source");
  auto back = Need(registrar.AllocateArena(kReadBack), "server read-back");
  std::span<std::byte> src = source->host_bytes();
  FillPattern(src);

  // 1. WRITE the window in chunks; a zero-length WRITE_WITH_IMM last tells the client it is all
  // there (RC executes in order).
  t0 = std::chrono::steady_clock::now();
  Need(pair.client->PostRecv(99), "post recv");
  for (size_t off = 0; off < kWindow; off += kChunk) {
    Need(pair.server->PostWrite({src.subspan(off, kChunk), source->lkey()}, advert.addr + off,
                                advert.rkey, off / kChunk),
         "post write");
  }
  Need(pair.server->PostWriteWithImm({{}, source->lkey()}, advert.addr, advert.rkey, kCookie, 1000),
       "post write with imm");
  ibv_wc recv = Need(pair.client->WaitCompletion(kStepTimeout), "client completion");
  Check(recv.status == IBV_WC_SUCCESS && recv.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
            (recv.wc_flags & IBV_WC_WITH_IMM) != 0 && ntohl(recv.imm_data) == kCookie,
        fmt::format("client got the immediate cookie ({})", ibv_wc_status_str(recv.status)));
  for (size_t n = 0; n <= kWindow / kChunk; ++n) {
    ibv_wc wc = Need(pair.server->WaitCompletion(kStepTimeout), "server completion");
    Need(WcToStatus(wc, "server WRITE"), "server WRITE completion");
  }
  const double write_ms = Ms(t0);
  std::span<std::byte> dst = pair.client_window->host_bytes();
  const size_t bad = FirstMismatch(dst);
  Check(bad == kWindow,
        fmt::format("{} MiB RDMA-written in {:.0f} ms, every byte verified{}", kWindow >> 20,
                    write_ms, bad == kWindow ? "" : fmt::format(" (first bad {})", bad)));

  // 2. READ back from the middle of the client's window.
  t0 = std::chrono::steady_clock::now();
  Need(pair.server->PostRead({back->host_bytes(), back->lkey()}, advert.addr + kReadOffset,
                             advert.rkey, 2000),
       "post read");
  ibv_wc rd = Need(pair.server->WaitCompletion(kStepTimeout), "read completion");
  Need(WcToStatus(rd, "server READ"), "server READ completion");
  Check(std::memcmp(back->host_bytes().data(), dst.data() + kReadOffset, kReadBack) == 0,
        fmt::format("{} MiB RDMA-read back in {:.0f} ms, every byte verified", kReadBack >> 20,
                    Ms(t0)));

  // 3. Timeouts work: nothing is pending on the client.
  t0 = std::chrono::steady_clock::now();
  Result<ibv_wc> none = pair.client->WaitCompletion(milliseconds(300));
  Check(!none.ok() && none.status().code() == StatusCode::kDeadlineExceeded,
        fmt::format("an idle wait ends in {:.0f} ms with {}", Ms(t0),
                    none.ok() ? "a completion" : none.status().ToString()));

  // 4. Wrong rkey.
  Need(pair.server->PostWrite({src.subspan(0, 4096), source->lkey()}, advert.addr,
                              advert.rkey ^ 0x00ff0000u, 3000),
       "post write (wrong rkey)");
  ExpectAccessError(*pair.server, "WRITE with a wrong rkey");
}

void DeregisteredWindow(RcListener& listener, const std::shared_ptr<ProtectionDomain>& server_pd,
                        const std::string& ip) {
  Pair pair = Connect(listener, server_pd, ip, size_t{1} << 20);
  const Advert advert = AdvertOf(*pair.server);
  pair.client_window.reset();  // deregisters: the advertised rkey is revoked (the fence)
  VerbsRegistrar registrar(server_pd);
  auto source = Need(registrar.AllocateArena(4096), "server source");
  Need(pair.server->PostWrite({source->host_bytes(), source->lkey()}, advert.addr, advert.rkey,
                              4000),
       "post write (deregistered)");
  ExpectAccessError(*pair.server, "WRITE into a deregistered window");
}

void RefusedConnection(const std::string& ip) {
  // Port 1: rdma_cm ports are separate from TCP's, and nothing here listens on 1.
  const auto t0 = std::chrono::steady_clock::now();
  auto connector = Need(RcConnector::Resolve(ip, 1, kStepTimeout), "resolve (refused)");
  auto pd = Need(ProtectionDomain::OnContext(connector->context()), "PD (refused)");
  Result<std::unique_ptr<RcConnection>> c =
      RcConnector::Connect(std::move(connector), pd, {}, milliseconds(10000));
  Check(!c.ok() && c.status().code() == StatusCode::kUnavailable &&
            c.status().message().find("nobody listens") != std::string_view::npos,
        fmt::format("connecting to a port nobody listens on fails in {:.0f} ms: {}", Ms(t0),
                    c.ok() ? "connected?!" : c.status().ToString()));
}

void ManualQueuePairs(const DevicePort& where) {
  // Two device contexts, as two processes would have.
  auto server_pd = Need(ProtectionDomain::Open(where), "server PD (manual)");
  auto client_pd = Need(ProtectionDomain::Open(where), "client PD (manual)");
  auto server = Need(RcQueuePair::Create(server_pd, where.port), "server QP (manual)");
  auto client = Need(RcQueuePair::Create(client_pd, where.port), "client QP (manual)");
  VerbsRegistrar client_registrar(client_pd);
  VerbsRegistrar server_registrar(server_pd);
  constexpr size_t kManualWindow = size_t{2} << 20;
  auto window = Need(client_registrar.AllocateArena(kManualWindow), "client window (manual)");
  auto source = Need(server_registrar.AllocateArena(kManualWindow), "server source (manual)");
  std::span<std::byte> src = source->host_bytes();
  FillPattern(src, 7);

  // The PREPARE request's token: the client's QP and window, through the real codec.
  const RcEndpoint& c = client->local();
  std::string token = Need(rdmaio::wire::EncodeRcToken({.qpn = c.qpn,
                                                        .gid = c.gid,
                                                        .rkey = window->rkey(),
                                                        .addr = window->remote_addr(),
                                                        .length = window->length(),
                                                        .port = c.port,
                                                        .lid = c.lid}),
                           "encode token");
  rdmaio::wire::RcToken seen = Need(rdmaio::wire::DecodeRcToken(token), "decode token");
  auto t0 = std::chrono::steady_clock::now();
  Need(server->Connect(
           {.qpn = seen.qpn, .psn = c.psn, .gid = seen.gid, .port = seen.port, .lid = seen.lid}),
       "server RTR/RTS");
  Need(client->Connect(server->local()), "client RTR/RTS");
  Check(true, fmt::format("QPs {:#x} <-> {:#x} brought up by hand in {:.0f} ms (token {}...)",
                          server->local().qpn, c.qpn, Ms(t0), token.substr(0, 10)));

  t0 = std::chrono::steady_clock::now();
  Need(client->PostRecv(1), "post recv (manual)");
  Need(server->PostWrite({src, source->lkey()}, seen.addr, seen.rkey, 1), "write (manual)");
  Need(server->PostWriteWithImm({{}, source->lkey()}, seen.addr, seen.rkey, kCookie, 2),
       "write with imm (manual)");
  ibv_wc recv = Need(client->WaitCompletion(kStepTimeout), "client completion (manual)");
  for (int n = 0; n < 2; ++n) {
    ibv_wc wc = Need(server->WaitCompletion(kStepTimeout), "server completion (manual)");
    Need(WcToStatus(wc, "server WRITE (manual)"), "server WRITE completion (manual)");
  }
  Check(recv.status == IBV_WC_SUCCESS && ntohl(recv.imm_data) == kCookie &&
            std::memcmp(window->host_bytes().data(), src.data(), kManualWindow) == 0,
        fmt::format("{} MiB written over the hand-connected QPs in {:.0f} ms, every byte verified",
                    kManualWindow >> 20, Ms(t0)));

  Status wide = client->Connect({.qpn = 0x1000000});
  Check(wide.code() == StatusCode::kInvalidArgument,
        fmt::format("a 25-bit peer qpn is refused: {}", wide.ToString()));

  // A peer that is gone: aim a fresh QP at the client's number, then destroy the client.
  auto lonely = Need(RcQueuePair::Create(server_pd, where.port), "lonely QP");
  Need(lonely->Connect(c), "lonely RTR/RTS");
  client.reset();
  t0 = std::chrono::steady_clock::now();
  Need(lonely->PostWrite({src.subspan(0, 4096), source->lkey()}, seen.addr, seen.rkey, 3),
       "write to a gone peer");
  // The spec'd outcome is IBV_WC_RETRY_EXC_ERR once the ACK timeout (67 ms) has expired 7
  // times. Soft-RoCE on Debian's 6.1 kernel was seen not to report it within 30 s, so the check
  // is the one callers rely on: the wait ends by its deadline with an error, never hangs.
  constexpr milliseconds kGoneDeadline{5000};
  Result<ibv_wc> gone = lonely->WaitCompletion(kGoneDeadline);
  Status gone_status = gone.ok() ? WcToStatus(*gone, "WRITE to a gone peer") : gone.status();
  Check((gone.ok() && gone->status == IBV_WC_RETRY_EXC_ERR &&
         gone_status.code() == StatusCode::kUnavailable) ||
            (!gone.ok() && gone_status.code() == StatusCode::kDeadlineExceeded),
        fmt::format("a WRITE to a QP that no longer exists ends in {:.0f} ms: {}", Ms(t0),
                    gone_status.ToString()));
}

}  // namespace

int main(int argc, char** argv) {
  std::string ip;
  std::string device;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ip") == 0) ip = argv[i + 1];
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  }
  std::optional<DevicePort> port = PortToTest(device, ip);
  if (!port) return 77;
  const auto t0 = std::chrono::steady_clock::now();
  auto listener = Need(RcListener::Listen(ip, 0), "listen");
  auto server_pd = Need(ProtectionDomain::OnContext(listener->context()), "server PD");
  std::printf("listening on %s:%u\n", ip.c_str(), listener->port());
  WriteReadVerify(*listener, server_pd, ip);
  DeregisteredWindow(*listener, server_pd, ip);
  RefusedConnection(ip);
  ManualQueuePairs(*port);
  std::printf("%s: %d failure(s), %.0f ms\n", Failures() == 0 ? "PASS" : "FAIL", Failures(),
              Ms(t0));
  return Failures() == 0 ? 0 : 1;
}

// reelfs-rdma-get: reads an object through rdmaio's hipobj-rc-v2 channel (RcChannel over the
// S3 client and real verbs) and checks every byte against the source file and the path the bytes
// took. The VM test (in_vm_gateway.sh) runs it against reelfs-gateway --rdma over rxe0.
//
//   reelfs-rdma-get --endpoint http://127.0.0.1:PORT --bucket B --key K --source FILE
//                   [--device rxe0] [--window BYTES] [--parallel N] [--rounds R]
//                   [--timeout-ms MS] --expect rdma|http|fallback
//
// Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Prints one line of counters:
// "rdma_get: endpoint=... rdma_bytes=... http_bytes=... fallbacks=... sessions_opened=...".
// --expect rdma: every byte over RDMA; http: none over RDMA; fallback: at least one fetch tried
// RDMA and fell back to HTTP. Exit 0 when the bytes match and the expectation holds, 1 otherwise,
// 77 when there is no active RDMA port.
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "rdmaio/s3bridge/s3_control_plane.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/rc_channel.h"
#include "rdmaio/verbs/rc_session_qp.h"
#include "s3/client/s3_client.h"

namespace reelfs {
namespace {

struct Args {
  std::string endpoint, bucket, key, source, device, expect;
  uint64_t window = 1 << 20;
  int parallel = 2;
  int rounds = 1;
  int timeout_ms = 0;
};

int Usage(const std::string& why) {
  std::cerr << "reelfs-rdma-get: " << why << "\n";
  return 2;
}

int Run(const Args& args) {
  std::ifstream in(args.source, std::ios::binary);
  if (!in) return Usage("cannot read --source " + args.source);
  const std::vector<char> expected((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());

  auto where = rdmaio::verbs::FindActivePort(args.device);
  if (!where.ok()) {
    std::cerr << "skip: " << where.status().ToString() << "\n";
    return 77;
  }
  auto pd = rdmaio::verbs::ProtectionDomain::Open(*where);
  if (!pd.ok()) return Usage(pd.status().ToString());
  auto provider = std::make_shared<rdmaio::verbs::VerbsQpProvider>(*pd, where->port);
  auto arena = provider->verbs_registrar().AllocateArena(args.window * args.parallel);
  if (!arena.ok()) return Usage(arena.status().ToString());

  s3::ClientOptions options;
  options.endpoint = args.endpoint;
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  options.credentials = {ak ? ak : "", sk ? sk : "", ""};
  options.total_timeout = std::chrono::milliseconds(args.timeout_ms);
  options.retry.max_attempts = 2;
  auto client = s3::S3Client::Create(options);
  if (!client.ok()) return Usage(client.status().ToString());
  std::shared_ptr<s3::ObjectStore> store = std::move(client).value();
  auto control = rdmaio::s3bridge::S3ControlPlane::Create(store, options);
  if (!control.ok()) return Usage(control.status().ToString());
  auto channel =
      rdmaio::verbs::RcChannel::Create(std::move(control).value(), provider, RealClock(),
                                       {.max_sessions = static_cast<size_t>(args.parallel)});

  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> slot_busy(args.parallel, false);
  int in_flight = 0;
  int bad = 0;
  uint64_t fetches = 0;
  const uint64_t size = expected.size();
  for (int round = 0; round < args.rounds; ++round) {
    for (uint64_t offset = 0; offset < size; offset += args.window) {
      size_t slot = 0;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return in_flight < args.parallel; });
        while (slot_busy[slot]) ++slot;
        slot_busy[slot] = true;
        ++in_flight;
      }
      const uint64_t want = std::min<uint64_t>(args.window, size - offset);
      rdmaio::FetchRequest request{
          .bucket = args.bucket,
          .key = args.key,
          .object_offset = offset,
          .window = {.region = *arena, .offset = slot * args.window, .length = args.window}};
      ++fetches;
      channel->Fetch(
          std::move(request), [&, slot, offset, want](Result<rdmaio::FetchResult> result) {
            std::lock_guard lock(mu);
            if (!result.ok()) {
              std::cerr << fmt::format("rdma_get: fetch at {} failed: {}\n", offset,
                                       result.status().ToString());
              ++bad;
            } else if (result->bytes != want ||
                       std::memcmp((*arena)->host_bytes().data() + slot * args.window,
                                   expected.data() + offset, want) != 0) {
              std::cerr << fmt::format("rdma_get: bytes at {} differ ({} of {} bytes, via {})\n",
                                       offset, result->bytes, want,
                                       result->via == rdmaio::DataPath::kRdma ? "rdma" : "http");
              ++bad;
            }
            slot_busy[slot] = false;
            --in_flight;
            cv.notify_all();
          });
    }
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  }
  const rdmaio::verbs::RcChannelCounters c = channel->counters();
  std::cout << fmt::format(
                   "rdma_get: endpoint={} fetches={} rdma_requests={} rdma_bytes={} "
                   "http_requests={} http_bytes={} fallbacks={} sessions_opened={} "
                   "sessions_fenced={} failed={} mismatches={}",
                   c.endpoint, fetches, c.rdma_requests, c.rdma_bytes, c.http_requests,
                   c.http_bytes, c.fallbacks, c.sessions_opened, c.sessions_fenced, c.failed, bad)
            << std::endl;
  const uint64_t total = size * args.rounds;
  bool ok = bad == 0 && c.rdma_bytes + c.http_bytes == total;
  if (args.expect == "rdma") ok = ok && c.rdma_bytes == total && c.http_bytes == 0;
  if (args.expect == "http") ok = ok && c.rdma_bytes == 0;
  if (args.expect == "fallback") ok = ok && c.fallbacks > 0;
  std::cout << "rdma_get: " << (ok ? "OK" : "FAILED") << " (expect " << args.expect << ")"
            << std::endl;
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace reelfs

int main(int argc, char** argv) {
  reelfs::Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--endpoint")
      args.endpoint = value;
    else if (flag == "--bucket")
      args.bucket = value;
    else if (flag == "--key")
      args.key = value;
    else if (flag == "--source")
      args.source = value;
    else if (flag == "--device")
      args.device = value;
    else if (flag == "--expect")
      args.expect = value;
    else if (flag == "--window")
      args.window = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--parallel")
      args.parallel = std::atoi(value.c_str());
    else if (flag == "--rounds")
      args.rounds = std::atoi(value.c_str());
    else if (flag == "--timeout-ms")
      args.timeout_ms = std::atoi(value.c_str());
    else
      return reelfs::Usage("unknown flag " + flag);
  }
  if (args.endpoint.empty() || args.bucket.empty() || args.key.empty() || args.source.empty() ||
      args.window == 0 || args.parallel < 1 || args.rounds < 1 ||
      (args.expect != "rdma" && args.expect != "http" && args.expect != "fallback")) {
    return reelfs::Usage(
        "usage: --endpoint URL --bucket B --key K --source FILE --expect rdma|http|fallback "
        "[--device D] [--window BYTES] [--parallel N] [--rounds R] [--timeout-ms MS]");
  }
  return reelfs::Run(args);
}

// reelfs-rdma-get: reads an object through rdmaio's hipobj-rc-v2 channel (RcChannel over the
// S3 client and real verbs, wired by the mount's factory, cli/rdma_data_path.h) and checks every
// byte against the source file and the path the bytes took; or (--put) uploads a file through the
// channel and reads it back over plain HTTP. The VM test (in_vm_gateway.sh) runs it against
// reelfs-gateway --rdma over rxe0.
//
//   reelfs-rdma-get --endpoint http://127.0.0.1:PORT --bucket B --key K --source FILE
//                   [--device rxe0] [--window BYTES] [--parallel N] [--rounds R]
//                   [--timeout-ms MS] [--http-timeout-ms MS] --expect rdma|http|fallback
//   reelfs-rdma-get --endpoint URL --bucket B --key K --put FILE [--put-parts N]
//                   [--device rxe0] [--parallel N] [--rounds R] [--timeout-ms MS]
//                   [--http-timeout-ms MS] --expect rdma|http|fallback
//
// --timeout-ms bounds each attempt of the RDMA attempt's control requests (PREPARE, READY, the
// session PUT): a held transfer ends there and the request falls back to HTTP. The HTTP fallback
// (and every other plain S3 request: session GETs, read-backs) has its own per-attempt limit,
// --http-timeout-ms, 0 (default): none, only the S3 client's 30 s without a byte moving. One
// shared limit made the fallback flake (issue 21): in the VM a 3 MiB PUT alone takes 2-3 s.
//
// --put uploads FILE as object K (RcChannel::Put from one registered window), then reads it back
// with a plain S3 GET and compares; --put-parts N uploads it as a multipart upload of N parts
// (CreateMultipartUpload and CompleteMultipartUpload over HTTP, the parts through the channel, up
// to --parallel at once). With --rounds R > 1 each round after the first also reads the first
// window of the object back through the channel (a session GET, which confirms the session
// extension), so the next round's PUTs are session PUTs. Its counters line starts "rdma_put:".
//
// Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; REELFS_LOG sets the log spec
// (common/log.h). Prints one line of counters:
// "rdma_get: endpoint=... rdma_bytes=... http_bytes=... fallbacks=... sessions_opened=...".
// --expect rdma: every byte over RDMA; http: none over RDMA; fallback: at least one fetch tried
// RDMA and fell back to HTTP. Exit 0 when the bytes match and the expectation holds, 1 otherwise,
// 77 when there is no active RDMA port.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/rdma_data_path.h"
#include "common/log.h"
#include "rdmaio/channel/rc_channel.h"
#include "rdmaio/verbs/verbs_qp_provider.h"
#include "s3/await.h"
#include "s3/client/s3_client.h"

namespace reelfs {
namespace {

struct Args {
  std::string endpoint, bucket, key, source, device, expect;
  uint64_t window = 1 << 20;
  int parallel = 2;
  int rounds = 1;
  int timeout_ms = 0;       // the control plane's requests (the RDMA attempt)
  int http_timeout_ms = 0;  // the S3 client's (the HTTP fallback, read-backs)
  std::string put;          // --put FILE
  int put_parts = 0;        // --put-parts N (0: one PutObject)
};

std::vector<char> ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int Usage(const std::string& why) {
  std::cerr << "reelfs-rdma-get: " << why << "\n";
  return 2;
}

struct Channel {
  std::shared_ptr<s3::S3Client> client;  // the data GETs and read-backs; its counters
  cli::RdmaDataPath path;                // the mount's wiring, RC only: path.rc, path.rc_qps
};

// The S3 client, and the RC channel over it on the first active port of args.device, built by
// the mount's factory (cli/rdma_data_path.h). 77 when there is no active port, 2 on other
// errors, 0 on success.
int OpenChannel(const Args& args, Channel* out) {
  const cli::RdmaConfig config{.enabled = true,
                               .device = args.device,
                               .sessions = static_cast<size_t>(args.parallel),
                               .transport = cli::RdmaTransport::kRc};
  if (Status port = cli::ProbeRdmaPort(config); !port.ok()) {
    std::cerr << "skip: " << port.ToString() << "\n";
    return 77;
  }
  s3::ClientOptions options;
  options.endpoint = args.endpoint;
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  options.credentials = {ak ? ak : "", sk ? sk : "", ""};
  options.total_timeout = std::chrono::milliseconds(args.http_timeout_ms);
  options.retry.max_attempts = 2;
  auto client = s3::S3Client::Create(options);
  if (!client.ok()) return Usage(client.status().ToString());
  out->client = std::move(client).value();
  s3::ClientOptions control_options = options;
  control_options.total_timeout = std::chrono::milliseconds(args.timeout_ms);
  auto path = cli::OpenRdmaDataPath(config, out->client, control_options);
  if (!path.ok()) return Usage(path.status().ToString());
  out->path = std::move(path).value();
  return 0;
}

// The S3 client's own counters, for the counters line: the channel counts outcomes (an HTTP PUT
// that failed is only in `failed`, a session whose READY never answered is not "opened"), these
// count the plain S3 operations (fallbacks, read-backs, session GETs) and their retries.
std::string S3Counters(const Channel& ch) {
  const s3::ClientCounters s = ch.client->counters();
  return fmt::format(" s3_requests={} s3_retries={} s3_failures={}", s.requests, s.retries,
                     s.failures);
}

// Uploads args.put (args.rounds times) and reads it back over plain HTTP after each round.
int RunPut(const Args& args) {
  bool readable = false;
  const std::vector<char> source = ReadFile(args.put, &readable);
  if (!readable) return Usage("cannot read --put " + args.put);
  if (source.empty()) return Usage("--put: the file is empty (nothing to send over RDMA)");
  const uint64_t size = source.size();
  Channel ch;
  if (int rc = OpenChannel(args, &ch); rc != 0) return rc;
  auto arena = ch.path.rc_qps->verbs_registrar().AllocateArena(size);
  if (!arena.ok()) return Usage(arena.status().ToString());
  std::memcpy((*arena)->host_bytes().data(), source.data(), size);
  auto probe_window = ch.path.rc_qps->verbs_registrar().AllocateArena(args.window);
  if (!probe_window.ok()) return Usage(probe_window.status().ToString());

  std::atomic<int> bad = 0;
  std::atomic<uint64_t> puts = 0;
  // One PUT or part of the arena; blocks until `done`.
  auto put_window = [&](uint64_t offset, uint64_t length, int part,
                        const std::string& upload_id) -> Result<rdmaio::channel::PutResult> {
    auto promise = std::make_shared<std::promise<Result<rdmaio::channel::PutResult>>>();
    auto future = promise->get_future();
    ++puts;
    ch.path.rc->Put(
        {.bucket = args.bucket,
         .key = args.key,
         .part_number = part,
         .upload_id = upload_id,
         .window = {.region = *arena, .offset = offset, .length = length},
         .content_type = "application/octet-stream"},
        [promise](Result<rdmaio::channel::PutResult> r) { promise->set_value(std::move(r)); });
    return future.get();
  };
  for (int round = 0; round < args.rounds; ++round) {
    if (round > 0) {
      // A session GET through the channel: confirms the session extension (and checks the start
      // of the object over RDMA).
      const uint64_t want = std::min<uint64_t>(args.window, size);
      auto promise = std::make_shared<std::promise<Result<rdmaio::FetchResult>>>();
      auto future = promise->get_future();
      ch.path.rc->Fetch(
          {.bucket = args.bucket,
           .key = args.key,
           .window = {.region = *probe_window, .length = want}},
          [promise](Result<rdmaio::FetchResult> r) { promise->set_value(std::move(r)); });
      Result<rdmaio::FetchResult> got = future.get();
      if (!got.ok() || got->bytes != want ||
          std::memcmp((*probe_window)->host_bytes().data(), source.data(), want) != 0) {
        std::cerr << "rdma_put: the RDMA read-back of round " << round
                  << " differs or failed: " << (got.ok() ? "bytes" : got.status().ToString())
                  << "\n";
        ++bad;
      }
    }
    if (args.put_parts == 0) {
      Result<rdmaio::channel::PutResult> r = put_window(0, size, 0, {});
      if (!r.ok()) {
        std::cerr << "rdma_put: PUT failed: " << r.status().ToString() << "\n";
        ++bad;
      }
    } else {
      Result<std::string> upload = s3::Await<std::string>([&](s3::Callback<std::string> cb) {
        ch.client->CreateMultipartUpload({.bucket = args.bucket, .key = args.key}, cb);
      });
      if (!upload.ok()) return Usage("CreateMultipartUpload: " + upload.status().ToString());
      const uint64_t part_size = (size + args.put_parts - 1) / args.put_parts;
      std::vector<std::future<Result<rdmaio::channel::PutResult>>> parts;
      std::vector<s3::CompletedPart> completed;
      // Up to --parallel parts in flight (the channel queues the rest on its sessions).
      for (int i = 0; i < args.put_parts && static_cast<uint64_t>(i) * part_size < size; ++i) {
        const uint64_t offset = i * part_size;
        const uint64_t length = std::min(part_size, size - offset);
        parts.push_back(std::async(std::launch::async, put_window, offset, length, i + 1, *upload));
        if (parts.size() % args.parallel == 0) {
          for (auto& f : parts) f.wait();
        }
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        Result<rdmaio::channel::PutResult> r = parts[i].get();
        if (!r.ok()) {
          std::cerr << "rdma_put: part " << i + 1 << " failed: " << r.status().ToString() << "\n";
          ++bad;
          continue;
        }
        completed.push_back({.part_number = static_cast<int>(i) + 1, .etag = r->etag});
      }
      Result<std::string> etag = s3::Await<std::string>([&](s3::Callback<std::string> cb) {
        ch.client->CompleteMultipartUpload(
            {.bucket = args.bucket, .key = args.key, .upload_id = *upload, .parts = completed}, cb);
      });
      if (!etag.ok()) {
        std::cerr << "rdma_put: CompleteMultipartUpload: " << etag.status().ToString() << "\n";
        ++bad;
      }
    }
    // Read back over plain HTTP (no token): the object must be the file, never 0 bytes.
    std::vector<std::byte> back(size + 1);
    Result<s3::GetObjectResult> got =
        s3::Await<s3::GetObjectResult>([&](s3::Callback<s3::GetObjectResult> cb) {
          ch.client->GetObject({.bucket = args.bucket, .key = args.key, .buffer = back}, cb);
        });
    if (!got.ok() || got->bytes != size || std::memcmp(back.data(), source.data(), size) != 0) {
      std::cerr << "rdma_put: read-back over HTTP differs: "
                << (got.ok() ? fmt::format("{} bytes of {}", got->bytes, size)
                             : got.status().ToString())
                << "\n";
      ++bad;
    }
  }
  const rdmaio::channel::RcChannelCounters c = ch.path.rc->counters();
  std::cout << fmt::format(
                   "rdma_put: endpoint={} puts={} rdma_put_requests={} rdma_put_bytes={} "
                   "http_put_requests={} http_put_bytes={} fallbacks={} sessions_opened={} "
                   "sessions_fenced={} failed={} session_extension={} mismatches={}",
                   c.endpoint, puts.load(), c.rdma_put_requests, c.rdma_put_bytes,
                   c.http_put_requests, c.http_put_bytes, c.fallbacks, c.sessions_opened,
                   c.sessions_fenced, c.failed, ch.path.rc->session_extension_confirmed() ? 1 : 0,
                   bad.load())
            << S3Counters(ch) << std::endl;
  const uint64_t total = size * args.rounds;
  bool ok = bad == 0 && c.rdma_put_bytes + c.http_put_bytes == total;
  if (args.expect == "rdma") ok = ok && c.rdma_put_bytes == total && c.http_put_bytes == 0;
  if (args.expect == "http") ok = ok && c.rdma_put_bytes == 0;
  if (args.expect == "fallback") ok = ok && c.fallbacks > 0;
  std::cout << "rdma_put: " << (ok ? "OK" : "FAILED") << " (expect " << args.expect << ")"
            << std::endl;
  return ok ? 0 : 1;
}

int Run(const Args& args) {
  bool readable = false;
  const std::vector<char> expected = ReadFile(args.source, &readable);
  if (!readable) return Usage("cannot read --source " + args.source);
  Channel ch;
  if (int rc = OpenChannel(args, &ch); rc != 0) return rc;
  auto arena = ch.path.rc_qps->verbs_registrar().AllocateArena(args.window * args.parallel);
  if (!arena.ok()) return Usage(arena.status().ToString());
  const std::shared_ptr<rdmaio::channel::RcChannel>& channel = ch.path.rc;

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
  const rdmaio::channel::RcChannelCounters c = channel->counters();
  std::cout << fmt::format(
                   "rdma_get: endpoint={} fetches={} rdma_requests={} rdma_bytes={} "
                   "http_requests={} http_bytes={} fallbacks={} sessions_opened={} "
                   "sessions_fenced={} failed={} mismatches={}",
                   c.endpoint, fetches, c.rdma_requests, c.rdma_bytes, c.http_requests,
                   c.http_bytes, c.fallbacks, c.sessions_opened, c.sessions_fenced, c.failed, bad)
            << S3Counters(ch) << std::endl;
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
  // A failing run is read from timestamps: REELFS_LOG=warn,rdma=debug,s3=debug,curl=trace shows
  // each control request, each HTTP attempt and when its body was sent.
  if (const char* spec = std::getenv("REELFS_LOG")) {
    if (reelfs::Status st = reelfs::ConfigureLogging(spec); !st.ok()) {
      return reelfs::Usage("REELFS_LOG: " + st.ToString());
    }
  }
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
    else if (flag == "--http-timeout-ms")
      args.http_timeout_ms = std::atoi(value.c_str());
    else if (flag == "--put")
      args.put = value;
    else if (flag == "--put-parts")
      args.put_parts = std::atoi(value.c_str());
    else
      return reelfs::Usage("unknown flag " + flag);
  }
  if (args.endpoint.empty() || args.bucket.empty() || args.key.empty() ||
      (args.source.empty() == args.put.empty()) || args.window == 0 || args.parallel < 1 ||
      args.rounds < 1 || args.put_parts < 0 || args.put_parts > 10000 ||
      (args.expect != "rdma" && args.expect != "http" && args.expect != "fallback")) {
    return reelfs::Usage(
        "usage: --endpoint URL --bucket B --key K (--source FILE | --put FILE [--put-parts N]) "
        "--expect rdma|http|fallback [--device D] [--window BYTES] [--parallel N] [--rounds R] "
        "[--timeout-ms MS] [--http-timeout-ms MS]");
  }
  return args.put.empty() ? reelfs::Run(args) : reelfs::RunPut(args);
}

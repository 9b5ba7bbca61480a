// rgw_rdma_probe: reelfs' RDMA data channel (hipobj-rc-v2 RcChannel, the real S3 control plane
// and S3 client) pointed at a server that may not speak S3 over RDMA, on a machine with no RDMA
// device. The queue pairs are stand-ins that can never connect: if the server accepted a
// PREPARE, the probe would fail, so what it proves is the decline path against the server's real
// answers:
//   1. a fetch of the whole object: PREPARE declined, bytes over HTTP, equal to FILE;
//   2. a second fetch: the endpoint policy now routes GETs over HTTP without trying RDMA;
//   3. an RDMA PUT of FILE to PUT_KEY: declined before anything is stored, re-sent over HTTP
//      (the caller checks with another client that PUT_KEY holds FILE's bytes, not 0 bytes).
// Prints each step's path, the endpoint policy per op and the channel's counters (`fallbacks`:
// requests that tried RDMA first, here fetch 1 and the put).
//
//   rgw_rdma_probe BUCKET KEY FILE PUT_KEY      (endpoint: AWS_ENDPOINT_URL; credentials: AWS_*)
//
// Exit: 0 every check held; 1 a check failed (the line says which); 2 usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rdmaio/channel/rc_channel.h"
#include "rdmaio/s3bridge/s3_control_plane.h"
#include "s3/client/s3_client.h"
#include "tests/fakes/host_region.h"

namespace reelfs {
namespace {

using rdmaio::channel::RcEndpoint;
using rdmaio::channel::RcSessionQp;

// A queue pair that exists only to give PREPARE its token: connecting it is the one thing a
// declining server never makes us do.
class UnconnectableQp final : public RcSessionQp {
 public:
  explicit UnconnectableQp(uint32_t qpn) { local_.qpn = qpn; }
  const RcEndpoint& local() const override { return local_; }
  Status Connect(const RcEndpoint&) override {
    return Status::FailedPrecondition("rgw_rdma_probe: the server accepted a PREPARE");
  }
  Status PostRecv(uint64_t) override { return Status::Ok(); }
  Result<int> ReapReceives() override { return 0; }
  Status Fence() override { return Status::Ok(); }

 private:
  RcEndpoint local_;
};

class ProbeQps final : public rdmaio::channel::RcQpProvider {
 public:
  Result<std::unique_ptr<RcSessionQp>> CreateQp() override {
    return std::unique_ptr<RcSessionQp>(std::make_unique<UnconnectableQp>(next_qpn_++));
  }
  Result<rdmaio::channel::WindowAddress> Locate(
      const rdmaio::RegisteredWindow& window) const override {
    return testing::LocateFakeWindow(window);
  }
  rdmaio::MemoryRegistrar& registrar() override {
    std::fputs("rgw_rdma_probe: registrar() is not used by the channel's fetch or put\n", stderr);
    std::abort();
  }

 private:
  uint32_t next_qpn_ = 0x100;
};

const char* StateName(rdmaio::wire::OpState state) {
  switch (state) {
    case rdmaio::wire::OpState::kUnknown:
      return "unknown";
    case rdmaio::wire::OpState::kConfirmed:
      return "confirmed";
    case rdmaio::wire::OpState::kDeclined:
      return "declined";
  }
  return "?";
}

const char* PathName(rdmaio::DataPath via) {
  return via == rdmaio::DataPath::kRdma ? "RDMA" : "HTTP";
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "rgw_rdma_probe: FAIL: %s\n", what.c_str());
  return 1;
}

int Run(const std::string& bucket, const std::string& key, const std::string& file,
        const std::string& put_key) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Fail("cannot read " + file);
  std::vector<char> text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> want(text.size());
  std::memcpy(want.data(), text.data(), text.size());
  if (want.empty()) return Fail(file + " is empty");

  auto options = s3::ClientOptionsFromAwsEnvironment();
  if (!options.ok()) return Fail("credentials: " + options.status().ToString());
  if (options->endpoint.empty()) return Fail("AWS_ENDPOINT_URL is not set");
  auto client = s3::S3Client::Create(*options);
  if (!client.ok()) return Fail("S3 client: " + client.status().ToString());
  std::shared_ptr<s3::ObjectStore> store = std::move(client).value();
  auto plane = rdmaio::s3bridge::S3ControlPlane::Create(store, *options);
  if (!plane.ok()) return Fail("control plane: " + plane.status().ToString());
  auto channel = rdmaio::channel::RcChannel::Create(std::move(plane).value(),
                                                    std::make_shared<ProbeQps>(), RealClock());
  const std::string plane_endpoint = channel->counters().endpoint;

  auto fetch = [&](const char* step) -> Result<rdmaio::FetchResult> {
    auto region = std::make_shared<testing::FakeHostRegion>(want.size());
    std::promise<Result<rdmaio::FetchResult>> done;
    channel->Fetch({.bucket = bucket,
                    .key = key,
                    .window = {.region = region, .offset = 0, .length = want.size()}},
                   [&](Result<rdmaio::FetchResult> r) { done.set_value(std::move(r)); });
    auto result = done.get_future().get();
    if (!result.ok()) return result.status();
    if (result->bytes != want.size() ||
        std::memcmp(region->host_bytes().data(), want.data(), want.size()) != 0) {
      return Status::DataLoss(std::string(step) + ": the bytes differ from " + file);
    }
    std::printf("%s: %llu bytes over %s, byte-exact; GET policy: %s\n", step,
                static_cast<unsigned long long>(result->bytes), PathName(result->via),
                StateName(channel->policy().state(plane_endpoint, rdmaio::wire::RdmaOp::kGet)));
    return result;
  };

  auto first = fetch("fetch 1");
  if (!first.ok()) return Fail(first.status().ToString());
  if (first->via != rdmaio::DataPath::kHttp) return Fail("fetch 1 claims RDMA");
  auto second = fetch("fetch 2");
  if (!second.ok()) return Fail(second.status().ToString());
  if (channel->policy().state(plane_endpoint, rdmaio::wire::RdmaOp::kGet) !=
      rdmaio::wire::OpState::kDeclined) {
    return Fail("the endpoint's GET policy is not 'declined' after its refusal");
  }
  // Only the first fetch tried RDMA: the second went straight to HTTP (no second PREPARE).
  if (const rdmaio::ChannelCounters after = channel->counters();
      after.fallbacks != 1 || after.http_requests != 2) {
    return Fail("the second fetch tried RDMA again (fallbacks " + std::to_string(after.fallbacks) +
                ")");
  }

  auto payload = std::make_shared<testing::FakeHostRegion>(std::span<std::byte>(want));
  std::promise<Result<rdmaio::PutResult>> put_done;
  channel->Put({.bucket = bucket,
                .key = put_key,
                .window = {.region = payload, .offset = 0, .length = want.size()}},
               [&](Result<rdmaio::PutResult> r) { put_done.set_value(std::move(r)); });
  auto put = put_done.get_future().get();
  if (!put.ok()) return Fail("put: " + put.status().ToString());
  std::printf("put: %llu bytes over %s, ETag %s; PUT policy: %s\n",
              static_cast<unsigned long long>(put->bytes), PathName(put->via), put->etag.c_str(),
              StateName(channel->policy().state(plane_endpoint, rdmaio::wire::RdmaOp::kPut)));
  if (put->via != rdmaio::DataPath::kHttp || put->bytes != want.size()) {
    return Fail("the put did not go over HTTP with every byte");
  }

  const rdmaio::ChannelCounters c = channel->counters();
  std::printf(
      "counters: endpoint %s transport %s rdma_requests %llu rdma_bytes %llu http_requests %llu "
      "http_bytes %llu fallbacks %llu sessions_opened %llu failed %llu rdma_put_bytes %llu "
      "http_put_bytes %llu\n",
      c.endpoint.c_str(), c.transport.c_str(), static_cast<unsigned long long>(c.rdma_requests),
      static_cast<unsigned long long>(c.rdma_bytes),
      static_cast<unsigned long long>(c.http_requests),
      static_cast<unsigned long long>(c.http_bytes), static_cast<unsigned long long>(c.fallbacks),
      static_cast<unsigned long long>(c.sessions_opened), static_cast<unsigned long long>(c.failed),
      static_cast<unsigned long long>(c.rdma_put_bytes),
      static_cast<unsigned long long>(c.http_put_bytes));
  if (c.rdma_bytes != 0 || c.rdma_put_bytes != 0 || c.sessions_opened != 0 || c.failed != 0 ||
      c.http_bytes != 2 * want.size() || c.fallbacks != 2) {
    return Fail("counters do not say: every byte over HTTP after a decline");
  }
  return 0;
}

}  // namespace
}  // namespace reelfs

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fputs("usage: rgw_rdma_probe BUCKET KEY FILE PUT_KEY\n", stderr);
    return 2;
  }
  return reelfs::Run(argv[1], argv[2], argv[3], argv[4]);
}

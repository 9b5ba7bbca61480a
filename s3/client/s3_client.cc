#include "s3/client/s3_client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/log.h"
#include "s3/client/aws_config.h"
#include "s3/client/refreshing_credentials.h"
#include "s3/client/socket_body_source.h"

namespace reelfs::s3 {

Result<ClientOptions> ClientOptionsFromAwsEnvironment(std::string_view profile) {
  REELFS_ASSIGN_OR_RETURN(AwsSettings settings, ResolveAwsSettings(ProcessEnvironment(), profile));
  ClientOptions options;
  options.endpoint = settings.endpoint_url;
  options.region = settings.region;
  options.credentials = settings.credentials;
  options.ca_bundle = settings.ca_bundle;
  if (settings.refresh && settings.credentials_expiration) {
    options.credential_source = std::make_shared<RefreshingCredentials>(
        TemporaryCredentials{settings.credentials, settings.credentials_expiration},
        std::move(settings.refresh), settings.credentials_source);
    const auto left = std::chrono::duration_cast<std::chrono::minutes>(
        *settings.credentials_expiration - std::chrono::system_clock::now());
    REELFS_LOG_INFO(
        "s3", "temporary credentials from {} expire in {} min; refreshed 5 min before they do",
        settings.credentials_source, left.count());
  }
  return options;
}

Result<std::unique_ptr<S3Client>> S3Client::Create(ClientOptions options) {
  TransportOptions t;
  const std::string endpoint =
      options.endpoint.empty() ? AwsEndpointForRegion(options.region) : options.endpoint;
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<EndpointSet> endpoints,
                          EndpointSet::Create(EndpointSet::SplitList(endpoint), {}));
  t.endpoint = endpoints->endpoint(0);
  t.endpoints = std::move(endpoints);
  t.addressing = options.addressing;
  t.region = options.region;
  t.credentials = options.credentials;
  t.credential_source = options.credential_source;
  t.max_connections = options.max_connections;
  t.connect_timeout = options.connect_timeout;
  t.idle_timeout = options.idle_timeout;
  t.total_timeout = options.total_timeout;
  t.retry = options.retry;
  t.jitter = options.jitter;
  t.ca_bundle = options.ca_bundle;
  t.verify_tls = options.verify_tls;
  t.user_agent = options.user_agent.empty() ? "reelfs/0.1" : options.user_agent;
  t.unsigned_payload_min_bytes = options.unsigned_payload_min_bytes;
  if (t.max_connections <= 0) return Status::InvalidArgument("max_connections must be positive");
  if (options.event_loop_threads < 0) {
    return Status::InvalidArgument("event_loop_threads must not be negative");
  }
  int loops = options.event_loop_threads;
  if (loops == 0) loops = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 2u));
  loops = std::min(loops, t.max_connections);
  t.max_connections = std::max(1, t.max_connections / loops);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int i = 0; i < loops; ++i) {
    REELFS_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, Transport::Create(t));
    transports.push_back(std::move(transport));
  }
  const uint64_t direct_min = options.direct_get_min_bytes;
  const int direct_threads = options.max_connections;
  std::unique_ptr<S3Client> client(new S3Client(std::move(options), std::move(transports)));
  // The fallback may use the client: the receiver is stopped (its threads joined) in ~S3Client
  // before anything else goes.
  client->direct_ = DirectGet::Create(
      t, direct_min, direct_threads,
      [c = client.get()](const GetObjectRequest& req, Callback<GetObjectResult> done) {
        c->GetObjectOverTransport(req, std::move(done));
      });
  return client;
}

S3Client::S3Client(ClientOptions options, std::vector<std::unique_ptr<Transport>> transports)
    : options_(std::move(options)), transports_(std::move(transports)) {}

S3Client::~S3Client() { direct_.reset(); }

std::unique_ptr<BodySource> S3Client::CreateBodySource() const {
  return CreateSocketBodySource(transports_.front()->options());
}

Transport& S3Client::PickTransport() {
  return *transports_[next_transport_.fetch_add(1, std::memory_order_relaxed) % transports_.size()];
}

std::vector<EndpointStats> S3Client::endpoint_stats() const {
  return transports_.front()->options().endpoints->Stats();
}

bool S3Client::endpoint_up(size_t i) const {
  const auto& set = transports_.front()->options().endpoints;
  return i < set->size() && set->Up(i);
}

ClientCounters S3Client::counters() const {
  ClientCounters c;
  for (const auto& transport : transports_) {
    const TransportCounters t = transport->counters();
    c.requests += t.requests;
    c.retries += t.retries;
    c.failures += t.failures;
    c.bytes_sent += t.bytes_sent;
    c.bytes_received += t.bytes_received;
  }
  if (direct_ != nullptr) {
    // A fallback is counted again by the transport that ran it.
    const DirectGetCounters d = direct_->counters();
    c.direct_gets = d.requests - d.fallbacks;
    c.direct_fallbacks = d.fallbacks;
    c.requests += d.requests - d.fallbacks;
    c.bytes_received += d.bytes;
  }
  return c;
}

}  // namespace reelfs::s3

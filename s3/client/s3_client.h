// S3Client: the libcurl implementation of reelfs::s3::ObjectStore (s3/object_store.h).
//
//   auto options = ClientOptionsFromAwsEnvironment();       // env + ~/.aws, like the AWS CLI
//   auto client = S3Client::Create(*options);               // starts the event-loop thread
//   auto info = Await<ObjectInfo>([&](auto cb) { (*client)->HeadObject({"b", "k"}, cb); });
//
// Each operation is one HTTP exchange on one of the client's Transports (each one event-loop
// thread with its own connection pool, retries with full-jitter backoff), chosen round-robin;
// operations live one per file (get_object.cc, list_objects.cc, ...). Completions run on the
// event-loop thread of the Transport that ran the exchange, or on a direct receiver thread
// (direct_get.h) for the large ranged GETs into buffers over plain http that it takes. Several
// loops exist because one loop thread copies every received byte out of libcurl's buffer: at
// loopback/RDMA-class rates that copy, not the network, limits one thread.
//
// Thread-safety: all methods may be called concurrently from any thread. Destroying the client
// completes every pending operation with kCancelled before it returns, except when it is destroyed
// from one of its own completions (the event-loop thread): then it returns at once and the loop
// completes them right after, on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "s3/body_stream.h"
#include "s3/client/direct_get.h"
#include "s3/client/endpoint_set.h"
#include "s3/client/request_target.h"
#include "s3/client/retry_policy.h"
#include "s3/client/transport.h"
#include "s3/object_store.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {

struct ClientOptions {
  // "http(s)://host[:port][/path]". Empty: AWS for `region` (https://s3.REGION.amazonaws.com).
  // Several, comma-separated ("http://a:7070,http://b:7070"): front ends of one store; requests
  // are spread over the healthy ones and fail over (s3/client/endpoint_set.h).
  std::string endpoint;
  // SigV4 signing region.
  std::string region = "us-east-1";
  // kPath: http://host/bucket/key (gateways, s3rver, MinIO). kVirtualHost: http://bucket.host/key.
  Addressing addressing = Addressing::kPath;
  // Empty access key: requests go unsigned (anonymous).
  Credentials credentials;
  // Temporary credentials kept fresh; when set, every attempt is signed with its Current()
  // instead of `credentials`.
  std::shared_ptr<RefreshingCredentials> credential_source;
  // Upper bound of concurrent connections (per host and in total); more requests queue in libcurl.
  int max_connections = 64;
  // Event-loop threads (Transports); each gets max_connections / event_loop_threads connections
  // (at least 1). 0: min(2, hardware threads).
  int event_loop_threads = 0;
  // TCP + TLS connection set-up limit per attempt.
  std::chrono::milliseconds connect_timeout{10'000};
  // An attempt during which no byte moves for this long is aborted (and retried). Whole seconds.
  std::chrono::milliseconds idle_timeout{30'000};
  // Limit for one attempt, start to end; 0 disables it (large GETs may take long but are never
  // idle, which idle_timeout catches).
  std::chrono::milliseconds total_timeout{0};
  // Retries: max_attempts=5 (first try included), base=100 ms, cap=20 s, full jitter.
  RetryOptions retry;
  // PEM file of trusted CAs for https (CURLOPT_CAINFO); empty: the system store.
  std::string ca_bundle;
  // Certificate and host name verification for https. Turn off only for test servers.
  bool verify_tls = true;
  // User-Agent header; empty: "reelfs/0.1".
  std::string user_agent;
  // Upload bodies at least this large are sent with x-amz-content-sha256: UNSIGNED-PAYLOAD
  // instead of their SHA-256 (saves hashing them; TLS still protects them). 0: always hash.
  uint64_t unsigned_payload_min_bytes = 0;
  // Ranged GETs into a buffer of at least this many bytes, over plain-http endpoints, are
  // received straight into the buffer by the direct receiver (direct_get.h) instead of through
  // libcurl's receive buffer: one copy of every byte fewer. 0: every GET goes through libcurl.
  uint64_t direct_get_min_bytes = 1 << 20;
  // For tests: the retry jitter source (uniform in [0, 1)); empty: random.
  RetryPolicy::JitterSource jitter;
};

// Options filled from AWS_* variables and ~/.aws/{credentials,config} (s3/client/aws_config.h).
// `profile` overrides AWS_PROFILE.
Result<ClientOptions> ClientOptionsFromAwsEnvironment(std::string_view profile = {});

struct ClientCounters {
  uint64_t requests = 0;        // operations submitted
  uint64_t retries = 0;         // attempts beyond the first
  uint64_t failures = 0;        // operations that ended with an error
  uint64_t bytes_sent = 0;      // request bodies
  uint64_t bytes_received = 0;  // response bodies
  // Of `requests`, GETs received straight into their buffers (direct_get.h), and GETs that
  // direct receiver handed to libcurl's path (an answer it does not take, a dropped connection).
  uint64_t direct_gets = 0;
  uint64_t direct_fallbacks = 0;
};

class S3Client final : public ObjectStore {
 public:
  static Result<std::unique_ptr<S3Client>> Create(ClientOptions options);
  ~S3Client() override;

  void ListBuckets(Callback<std::vector<BucketInfo>> done) override;
  void CreateBucket(const std::string& bucket, StatusCallback done) override;
  void DeleteBucket(const std::string& bucket, StatusCallback done) override;
  void ListObjects(const ListObjectsRequest& req, Callback<ListObjectsPage> done) override;
  void HeadObject(const HeadObjectRequest& req, Callback<ObjectInfo> done) override;
  void GetObject(const GetObjectRequest& req, Callback<GetObjectResult> done) override;
  void PutObject(const PutObjectRequest& req, Callback<std::string> done) override;
  void CreateMultipartUpload(const CreateMultipartUploadRequest& req,
                             Callback<std::string> done) override;
  void UploadPart(const UploadPartRequest& req, Callback<std::string> done) override;
  void CompleteMultipartUpload(const CompleteMultipartUploadRequest& req,
                               Callback<std::string> done) override;
  void AbortMultipartUpload(const AbortMultipartUploadRequest& req, StatusCallback done) override;
  void ListMultipartUploads(const ListMultipartUploadsRequest& req,
                            Callback<ListMultipartUploadsPage> done) override;
  void ListParts(const ListPartsRequest& req, Callback<ListPartsPage> done) override;
  void DeleteObject(const DeleteObjectRequest& req, StatusCallback done) override;
  void DeleteObjects(const DeleteObjectsRequest& req, Callback<DeleteObjectsResult> done) override;
  void CopyObject(const CopyObjectRequest& req, Callback<std::string> done) override;
  void UploadPartCopy(const UploadPartCopyRequest& req, Callback<std::string> done) override;
  void RestoreObject(const RestoreObjectRequest& req, Callback<RestoreOutcome> done) override;

  ClientCounters counters() const;
  // Per endpoint: requests, bytes, errors, up or down (one entry with a single endpoint).
  std::vector<EndpointStats> endpoint_stats() const;
  // Whether endpoint i (ClientOptions::endpoint's list order) is up now: cheap, any thread.
  bool endpoint_up(size_t i) const;
  const ClientOptions& options() const { return options_; }
  // A receiver of ranged GET bodies left in their sockets (s3/body_stream.h), over this client's
  // endpoints and credentials; nullptr when an endpoint is https.
  std::unique_ptr<BodySource> CreateBodySource() const;

 private:
  S3Client(ClientOptions options, std::vector<std::unique_ptr<Transport>> transports);
  // Round-robin over the transports; callable from any thread.
  Transport& PickTransport();
  // GetObject through libcurl (a Transport): every request the direct receiver does not take.
  void GetObjectOverTransport(const GetObjectRequest& req, Callback<GetObjectResult> done);

  ClientOptions options_;
  std::atomic<uint64_t> next_transport_{0};
  std::vector<std::unique_ptr<Transport>> transports_;  // each owns an event-loop thread
  // Null: https, or turned off. Destroyed first (~S3Client): its fallbacks use the transports.
  std::unique_ptr<DirectGet> direct_;
};

}  // namespace reelfs::s3

// S3Service: the S3 REST API over a Store, as an http::Handler.
//
// Start() splits the target into bucket/key (path style, or virtual-host style when Host is
// "<bucket>.<virtual_host_domain>"), verifies SigV4 (header or presigned) with
// s3::VerifyRequest, validates bucket name and key, and dispatches on method + subresource.
// Unsupported subresources get 501 NotImplemented; every error is an S3 XML document (no body
// for HEAD).
//
// Thread-safety: Start may be called concurrently from all io threads; the Store serializes
// what needs it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "gateway/http/types.h"
#include "gateway/s3api/http_metrics.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {
class Archive;
class FaultInjector;
class RdmaHook;
}  // namespace reelfs::gateway

namespace reelfs::gateway {

struct ServiceOptions {
  std::string access_key;  // the one credential pair the gateway accepts
  std::string secret_key;
  std::string region = "us-east-1";
  std::string virtual_host_domain;           // empty: path-style only
  uint64_t max_put_size = 5ull << 30;        // single PUT / part (S3: EntityTooLarge)
  uint64_t max_xml_body = 1 << 20;           // Complete, DeleteObjects, Restore bodies
  std::chrono::seconds max_clock_skew{900};  // x-amz-date vs now (RequestTimeTooSkewed)
};

class S3Service : public http::Handler {
 public:
  // `archive` (optional) serves RestoreObject and the archive state of objects, and the admin
  // endpoints; `faults` (optional) injects HTTP-level faults. Both must outlive the service.
  S3Service(Store& store, ServiceOptions options, Archive* archive = nullptr,
            FaultInjector* faults = nullptr);

  // Serves S3 over RDMA through `hook` (gateway/rdma/hook.h); null (default): plain S3 only, and
  // RDMA requests get the answers of a server that does not speak it, except a PUT carrying
  // x-amz-rdma-token, which is refused (400) rather than stored as the 0-byte object its empty
  // body would make. `hook` must outlive this.
  void set_rdma(RdmaHook* hook) { rdma_ = hook; }

  Started Start(http::Request request) override;
  http::Response InternalError(const http::Request& request, std::string_view what) override;
  http::Response BadRequest(const http::Request& request, std::string_view what) override;
  void Finished(std::string_view method, int status, uint64_t bytes_in, uint64_t bytes_out,
                double seconds) noexcept override;

 private:
  Store& store_;
  ServiceOptions options_;
  Archive* archive_;
  FaultInjector* faults_;
  RdmaHook* rdma_ = nullptr;
  HttpMetrics http_metrics_;
};

}  // namespace reelfs::gateway

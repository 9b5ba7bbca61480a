// RdmaHook: how S3Service hands S3-over-RDMA requests to the gateway's RDMA server
// (gateway/rdma/rc_server.h), without the S3 API code depending on rdma-core.
//
// S3Service calls it only for authenticated requests, and only when the gateway runs with RDMA
// enabled (`--rdma`):
//   * Control: POST /.hipobj-rc/{prepare,ready,cancel} (".hipobj-rc" is not a valid bucket
//     name, so no bucket can shadow the route). A PREPARE with op PUT asks `plan_put` whether the
//     PUT may happen (the same checks as an HTTP PutObject / UploadPart) and keeps its commit;
//   * ServeGet: a GetObject that carries x-amz-rdma-token, with the plain answer already built
//     (status, headers, the file range as body). Error answers (404, 403 InvalidObjectState, 412,
//     416, ...) are passed in too, and come back unchanged: they are not RDMA's business;
//   * ServePut: a PutObject / UploadPart with an empty body that carries x-amz-rdma-token (the
//     session PUT, docs/protocols/rdma-put.md), already checked; `commit` stores the body.
// All may return a Response whose `deferred` is set: the transfer runs off the io thread and the
// HTTP answer follows the completed RDMA WRITE / READ (docs/protocols/rdma.md §6).
//
// Thread-safety: called from every io thread at once. A commit runs on an RDMA worker thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/http/types.h"
#include "gateway/rdma/rdma_target.h"
#include "gateway/store/fs_root.h"

namespace reelfs::gateway {

// What becomes of a PUT's body (over HTTP or RDMA), decided before it arrives.
struct RdmaPutCommit {
  // Publishes `tmp` (`size` bytes whose hex MD5 is `md5_hex`) as the PUT's object or part and
  // returns the S3 answer: 200 with the ETag header, or an S3 error (nothing stored).
  using Publish =
      std::function<http::Response(TmpFile& tmp, const std::string& md5_hex, uint64_t size)>;
  // Where a body of `size` bytes (nullopt: not declared) is written: an UploadPart's region in
  // its upload's data file when it can go in place (Store::CreatePartTarget). Null: a tmp file.
  using Target = std::function<Result<TmpFile>(std::optional<uint64_t> size)>;

  RdmaPutCommit() = default;
  RdmaPutCommit(Publish p, Target t = nullptr) : publish(std::move(p)), target(std::move(t)) {}
  explicit operator bool() const { return static_cast<bool>(publish); }
  http::Response operator()(TmpFile& tmp, const std::string& md5_hex, uint64_t size) const {
    return publish(tmp, md5_hex, size);
  }

  Publish publish;
  Target target;
};
// For a PREPARE with op PUT: the commit for `target`, or the error answer (404 NoSuchBucket,
// NoSuchUpload, 413 EntityTooLarge, ...). `prepare` supplies Content-Type, x-amz-meta-* and
// x-amz-storage-class, as a PUT's headers would.
using RdmaPutPlan = std::variant<http::Response, RdmaPutCommit>;
using RdmaPutPlanner = std::function<RdmaPutPlan(const http::Request& prepare,
                                                 const RdmaTarget& target, uint64_t size)>;

class RdmaHook {
 public:
  virtual ~RdmaHook() = default;
  // `op` is the path segment after "/.hipobj-rc/": "prepare", "ready", "cancel" (else 404).
  virtual http::Response Control(const http::Request& request, std::string_view op,
                                 const RdmaPutPlanner& plan_put) = 0;
  virtual http::Response ServeGet(const http::Request& request, http::Response plain) = 0;
  // `size` is x-amz-rdma-size, already checked against the PUT size limit.
  virtual http::Response ServePut(const http::Request& request, uint64_t size,
                                  RdmaPutCommit commit) = 0;
};

}  // namespace reelfs::gateway

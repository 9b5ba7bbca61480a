// S3ControlPlane: rdmaio's ControlPlane over reelfs::s3, the one place the two meet.
//
// rdmaio may not include s3/ (and s3/ knows nothing of RDMA), so this adapter lives in its own
// small target, reelfs_rdmaio_s3bridge, at the composition level: only a composition root (cli,
// the api layer, test tools) links it, next to both sides (rdmaio/README.md says why here).
//
//   * Get goes through the ObjectStore (s3::GetObjectRequest::extra_headers carries the
//     x-amz-rdma-* headers; GetObjectResult::rdma_headers brings the response's back), so the
//     data GET shares the mount's connections, signing and retries.
//   * Post (hipobj-rc-v2 PREPARE / READY / CANCEL, which are not S3 operations) goes through a
//     Transport of its own with retries off: a retried PREPARE would leave a second server
//     session behind, and a retried READY would run a transfer twice.
//   * Put with headers (an RDMA PUT / UploadPart: empty body, token) goes through that same
//     Transport, once: a resend would run a second transfer from a window whose first attempt
//     was fenced, and its verdict is in x-amz-rdma-* answer headers that the ObjectStore's
//     PutObject / UploadPart (which return the ETag only) do not keep. Put without headers (the
//     HTTP fallback, the payload as the body) goes through the ObjectStore and may be retried.
//   * An HTTP error answer is a ControlReply (status, S3 code), not a failure: for the reply
//     classifier a 501 or a 503 is a verdict. Only "no answer" is a Status. The s3 layer keeps
//     no headers of an error answer, so an x-amz-rdma-reply next to a 4xx/5xx is not seen; the
//     classifier decides those by status alone (rows 7-11 of docs/protocols/rdma.md §3).
//
// Thread-safety: as ControlPlane (all methods from any thread).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "rdmaio/control_plane.h"
#include "s3/client/s3_client.h"
#include "s3/client/transport.h"
#include "s3/object_store.h"

namespace reelfs::rdmaio::s3bridge {

class S3ControlPlane final : public ControlPlane {
 public:
  // `store` serves the data GETs (normally the S3Client built from `options`); `options` give the
  // credentials and timeouts of the control POSTs. `endpoint`: which of options.endpoint's list
  // this plane talks to (empty: the first); with several, its data GETs are pinned there too
  // (GetObjectRequest::endpoint), since a session lives in one gateway.
  static Result<std::unique_ptr<S3ControlPlane>> Create(std::shared_ptr<s3::ObjectStore> store,
                                                        const s3::ClientOptions& options,
                                                        std::string endpoint = "");

  const std::string& endpoint() const override { return endpoint_; }
  void Get(ControlGet request, ControlCallback done) override;
  void Put(ControlPut request, ControlCallback done) override;
  void Post(ControlPost request, ControlCallback done) override;

 private:
  S3ControlPlane(std::shared_ptr<s3::ObjectStore> store, std::unique_ptr<s3::Transport> control,
                 std::string endpoint, bool pin_gets)
      : store_(std::move(store)),
        control_(std::move(control)),
        endpoint_(std::move(endpoint)),
        pin_gets_(pin_gets) {}

  std::shared_ptr<s3::ObjectStore> store_;
  std::unique_ptr<s3::Transport> control_;
  std::string endpoint_;  // the one URL this plane talks to
  bool pin_gets_;         // the store has several endpoints: data GETs go to endpoint_ only
};

}  // namespace reelfs::rdmaio::s3bridge

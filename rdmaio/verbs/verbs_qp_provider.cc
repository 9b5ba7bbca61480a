#include "rdmaio/verbs/verbs_qp_provider.h"

#include <fmt/format.h>

#include "rdmaio/verbs/rc_queue_pair.h"
#include "rdmaio/verbs/verbs_status.h"

namespace reelfs::rdmaio::verbs {

using channel::RcSessionQp;
using channel::WindowAddress;

namespace {

class VerbsSessionQp final : public RcSessionQp {
 public:
  explicit VerbsSessionQp(std::unique_ptr<RcQueuePair> qp) : qp_(std::move(qp)) {}

  const RcEndpoint& local() const override { return qp_->local(); }
  Status Connect(const RcEndpoint& remote) override { return qp_->Connect(remote); }
  Status PostRecv(uint64_t wr_id) override { return qp_->PostRecv(wr_id); }

  Result<int> ReapReceives() override {
    int receives = 0;
    while (true) {
      // A zero timeout polls once: never waits (this runs on the control plane's callbacks).
      Result<ibv_wc> wc = qp_->WaitCompletion(Timeout(0));
      if (!wc.ok()) {
        if (wc.status().code() == StatusCode::kDeadlineExceeded) return receives;
        return wc.status();
      }
      if (wc->status != IBV_WC_SUCCESS) return WcToStatus(*wc, "session QP");
      if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM || wc->opcode == IBV_WC_RECV) ++receives;
    }
  }

  Status Fence() override {
    if (fenced_) return Status::Ok();
    REELFS_RETURN_IF_ERROR(qp_->MoveToError());
    fenced_ = true;
    return Status::Ok();
  }

 private:
  std::unique_ptr<RcQueuePair> qp_;
  bool fenced_ = false;
};

}  // namespace

Result<std::unique_ptr<RcSessionQp>> VerbsQpProvider::CreateQp() {
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<RcQueuePair> qp,
                          RcQueuePair::Create(pd_, port_, options_));
  return std::unique_ptr<RcSessionQp>(new VerbsSessionQp(std::move(qp)));
}

Result<WindowAddress> VerbsQpProvider::Locate(const RegisteredWindow& window) const {
  const auto* region = dynamic_cast<const VerbsRegion*>(window.region.get());
  if (region == nullptr || region->pd() != pd_->pd()) {
    return Status::InvalidArgument(
        "window's region was not registered by this channel's registrar");
  }
  if (window.length == 0 || window.offset > region->length() ||
      window.length > region->length() - window.offset) {
    return Status::InvalidArgument(fmt::format("window [{}, +{}) outside its {}-byte region",
                                               window.offset, window.length, region->length()));
  }
  return WindowAddress{.addr = region->remote_addr() + window.offset, .rkey = region->rkey()};
}

}  // namespace reelfs::rdmaio::verbs
